"""Training workloads: a byte-level corpus, a small GPT trained for a fixed budget, a crash-safe
ledger of every trial, and the study loop that proposes the next one (autoresearch as assets)."""
