"""The engine: runs the rule set over files and documents (analyze), walks trees (walk,
check), in processes (process_pool), with the result cache, baselines, VCS diffs, evidence
and the editor's incremental path."""
