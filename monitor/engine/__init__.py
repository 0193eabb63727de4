"""The rule engine: the poll-evaluate-persist cycle, the evaluator (rules x runs -> alert transitions),
herowatch's own source-health alerts and the scheduler jobs that drive them."""
