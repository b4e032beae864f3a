"""Human-readable and JSON renderings of p2sim results (the outermost layer)."""
