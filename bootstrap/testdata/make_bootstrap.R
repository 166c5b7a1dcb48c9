# Reference intervals for the bootstrap tests, computed in base R from the resamples Go draws.
#
# Run from the repository root (base R only):
#   Rscript bootstrap/testdata/make_bootstrap.R [input dir] [output dir]     (both default to bootstrap/testdata)
#
# Reads (written by `go test ./bootstrap -run TestWriteInputs -update`):
#   units.csv      label, unit, x, a: each group's units (0-based unit index), a value x and a flag a (0 or 1).
#   resamples.csv  label, b, indices: bootstrap.WriteIndices's rows, the unit indices (0-based) of resample b
#                  of each group joined with ";".
# Writes:
#   intervals_ref.csv  label, stat, lo, hi, defined: per group, for stat "mean" (mean of x over the drawn units)
#                      and "mean_a" (mean of x over the drawn units with a = 1; undefined, NaN, on a resample that
#                      draws none), quantile(type = 7) at 0.025 and 0.975 over the resamples that define the
#                      statistic, and how many do. Empty lo and hi where none does.
# R computes each statistic on the drawn units themselves (the rows repeated), not on counts as Go does.
args <- commandArgs(trailingOnly = TRUE)
indir <- if (length(args) >= 1) args[1] else "bootstrap/testdata"
outdir <- if (length(args) >= 2) args[2] else indir
fmt <- function(v) ifelse(is.na(v), "", sprintf("%.17g", v))

units <- read.csv(file.path(indir, "units.csv"), colClasses = c(label = "character"))
res <- read.csv(file.path(indir, "resamples.csv"), colClasses = "character")
out <- list()
for (label in sort(unique(units$label), method = "radix")) {
  u <- units[units$label == label, ]
  u <- u[order(u$unit), ]
  rs <- res[res$label == label, ]
  rs <- rs[order(as.integer(rs$b)), ]
  draws <- lapply(strsplit(rs$indices, ";", fixed = TRUE), function(s) u[as.integer(s) + 1, ])
  stats <- list(
    mean = sapply(draws, function(d) mean(d$x)),
    mean_a = sapply(draws, function(d) if (any(d$a == 1)) mean(d$x[d$a == 1]) else NaN))
  for (stat in names(stats)) {
    v <- stats[[stat]]
    v <- v[!is.nan(v)]
    q <- if (length(v) > 0) unname(quantile(v, c(0.025, 0.975), type = 7)) else c(NA, NA)
    out[[length(out) + 1]] <- data.frame(label = label, stat = stat, lo = fmt(q[1]), hi = fmt(q[2]),
      defined = length(v))
  }
}
write.csv(do.call(rbind, out), file.path(outdir, "intervals_ref.csv"), row.names = FALSE)
