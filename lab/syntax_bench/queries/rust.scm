; SAFIM-style infilling tasks (see python/tasks.scm for the capture names).
(function_item body: (block) @block.inner)
(if_expression consequence: (block) @block.inner)
(for_expression body: (block) @block.inner)
(while_expression body: (block) @block.inner)
(if_expression condition: (_) @condition)
(while_expression condition: (_) @condition)
(call_expression arguments: (arguments) @arguments.inner)
