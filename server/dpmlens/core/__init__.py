"""What every stage shares: findings, errors and exit codes, limits and budgets, atomic
writes, paths, input reading, text edits. Imports nothing else of dpmlens."""
