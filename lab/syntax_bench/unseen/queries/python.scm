; Unseen syntax benchmark tasks (lab/syntax_bench). `@kind` takes the node's text as the
; middle; `@kind.inner` the text between its first and last child (the brackets).
(function_definition body: (block) @block)
(if_statement consequence: (block) @block)
(for_statement body: (block) @block)
(while_statement body: (block) @block)
(if_statement condition: (_) @condition)
(elif_clause condition: (_) @condition)
(while_statement condition: (_) @condition)
(call arguments: (argument_list) @arguments.inner)
(binary_operator right: (_) @expression)
(boolean_operator right: (_) @expression)
(assignment right: (_) @expression)
(return_statement (_) @expression)
