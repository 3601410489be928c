; Where a function can be installed in an ops struct's member (dpmlens.rules.ops_slots):
; struct variables with an initializer list, and assignments of a name to a member.
(declaration
  type: (struct_specifier)
  declarator: (init_declarator value: (initializer_list))) @decl
(assignment_expression
  left: (field_expression)
  right: (identifier)) @assign
