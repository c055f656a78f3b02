; Syntactic units a completion may end on (see python/units.scm).
[
  (expression_statement)
  (return_statement)
  (lexical_declaration)
  (variable_declaration)
  (break_statement)
  (continue_statement)
  (throw_statement)
  (if_statement)
  (for_statement)
  (for_in_statement)
  (while_statement)
  (do_statement)
  (try_statement)
  (switch_statement)
  (function_declaration)
  (class_declaration)
  (statement_block)
  (import_statement)
  (export_statement)
] @unit
(arguments (_) @inline)
[(arguments) (parenthesized_expression) (array) (object) (call_expression) (member_expression) (subscript_expression)] @inline
[(binary_expression) (unary_expression) (identifier)] @inline
