; SAFIM-style infilling tasks (see python/tasks.scm for the capture names).
(function_declaration body: (block) @block.inner)
(method_declaration body: (block) @block.inner)
(if_statement consequence: (block) @block.inner)
(for_statement body: (block) @block.inner)
(if_statement condition: (_) @condition)
(call_expression arguments: (argument_list) @arguments.inner)
