; Syntactic units a completion may end on: when the model runs on, the middle is cut
; back to the end of the last complete one of these.
[
  (expression_statement)
  (return_statement)
  (pass_statement)
  (break_statement)
  (continue_statement)
  (raise_statement)
  (assert_statement)
  (import_statement)
  (import_from_statement)
  (delete_statement)
  (global_statement)
  (nonlocal_statement)
  (if_statement)
  (for_statement)
  (while_statement)
  (try_statement)
  (with_statement)
  (function_definition)
  (class_definition)
  (decorated_definition)
] @unit
; Mid-line units (@inline), tried only when no statement-level cut works:
; a finished argument, a closed bracket, a finished operand.
(argument_list (_) @inline)
[(argument_list) (parenthesized_expression) (list) (tuple) (dictionary) (set) (subscript) (call)] @inline
[(comparison_operator) (boolean_operator) (not_operator) (binary_operator) (identifier) (attribute)] @inline
