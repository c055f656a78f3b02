; Syntactic units a completion may end on (see python/units.scm).
[
  (expression_statement)
  (let_declaration)
  (return_expression)
  (if_expression)
  (for_expression)
  (while_expression)
  (loop_expression)
  (match_expression)
  (function_item)
  (impl_item)
  (struct_item)
  (use_declaration)
  (block)
  (macro_invocation)
] @unit
(arguments (_) @inline)
[(arguments) (parenthesized_expression) (call_expression) (field_expression) (index_expression)] @inline
[(binary_expression) (unary_expression) (identifier)] @inline
