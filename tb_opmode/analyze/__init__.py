"""Stage 3, analysis: reader facts into a ``RunModel`` (counts, kernels, explanations)."""
