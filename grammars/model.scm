; Function definitions and object-like #defines anywhere in a file. build_model walks the top
; level in Python instead (faster); this query is kept for tools that want every nesting
; level (for example #defines inside function bodies).

(function_definition
  declarator: [
    (function_declarator declarator: (identifier) @function.name)
    (pointer_declarator
      declarator: (function_declarator declarator: (identifier) @function.name))
    (pointer_declarator
      declarator: (pointer_declarator
        declarator: (function_declarator declarator: (identifier) @function.name)))
    (parenthesized_declarator
      (function_declarator declarator: (identifier) @function.name))
  ]) @function.def

(preproc_def
  name: (identifier) @define.name
  value: (preproc_arg) @define.value)
