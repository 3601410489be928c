; Calls through a plain identifier (functions and function-like macros); used by
; dpmlens.model.build on the whole tree or on one function_definition at a time.
(call_expression
  function: (identifier)
  arguments: (argument_list)) @call
