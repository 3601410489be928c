; The per-file model query (dpmlens.model.build). One pass over the tree collects:
;   function definitions (@function.def with its @function.name),
;   calls through a plain identifier (@call),
;   object-like #defines (@define.name, @define.value).
; Capture lists come back out of document order; build.py sorts them.

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

(call_expression
  function: (identifier)
  arguments: (argument_list)) @call

(preproc_def
  name: (identifier) @define.name
  value: (preproc_arg) @define.value)
