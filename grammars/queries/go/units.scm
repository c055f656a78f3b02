; Syntactic units a completion may end on (see python/units.scm).
[
  (expression_statement)
  (return_statement)
  (short_var_declaration)
  (assignment_statement)
  (var_declaration)
  (const_declaration)
  (inc_statement)
  (dec_statement)
  (break_statement)
  (continue_statement)
  (go_statement)
  (defer_statement)
  (if_statement)
  (for_statement)
  (expression_switch_statement)
  (function_declaration)
  (method_declaration)
  (block)
] @unit
(argument_list (_) @inline)
[(argument_list) (parenthesized_expression) (call_expression) (selector_expression) (index_expression)] @inline
[(binary_expression) (unary_expression) (identifier)] @inline
