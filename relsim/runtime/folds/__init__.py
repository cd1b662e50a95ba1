"""The fold rules of every reduction, used by every backend and by the MPI layer: `host_folds`
(a key reduction's slots folded per target row in slot order; Global folds in row order; the
inverse index) and `exact_sum` (correctly rounded float Global sums, mergeable accumulators)."""
