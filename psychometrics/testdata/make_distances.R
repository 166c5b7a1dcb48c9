# Reference values for the answer-distribution tests, computed in R independently of the Go code.
#
# Run from the repository root (needs R with psych and GPArotation; Debian: apt-get install r-cran-psych
# r-cran-gparotation):
#   Rscript psychometrics/testdata/make_distances.R
#
# Writes into psychometrics/testdata:
#   distances.csv            case, p, q (probabilities joined with ";", 17 significant digits), and R's
#                            w1 = sum(abs(cumsum(p) - cumsum(q))), jsd in bits (0 * log 0 = 0), entropy of p and q
#                            in bits, tvd = sum(abs(p - q)) / 2, simbench = 100 * (1 - tvd(p, q) / tvd(u, q))
#                            with u uniform over the same options (empty where q is uniform), alignment =
#                            1 - w1 / (K - 1). Pairs over 2 to 7 options, some with zero probabilities, some
#                            disjoint, one with a uniform q.
#   expected_A.csv           a non-integer data matrix: for 400 of psych's bfi respondents and the five
#                            Agreeableness items (A1 reverse-keyed), the expected score sum(p * 1:6) of a pmf
#                            centred on the answer (weights exp(-|k - answer| / s), s drawn per cell); NA where
#                            bfi has none and in 5% more cells. It is what an answer distribution gives a scale.
#   reference_expected.csv   case, stat, item, value: psych's alpha() and omega(nfactors = 1, fm = "pa") on
#                            expected_A.csv, in the format of reference.csv.
suppressPackageStartupMessages({
  library(psych)
  library(GPArotation)
})
dir <- "psychometrics/testdata"
fmt <- function(v) ifelse(is.na(v), "", sprintf("%.17g", v))
set.seed(20261201)

# Distances.
w1 <- function(p, q) sum(abs(cumsum(p) - cumsum(q)))
plogp <- function(p, m) ifelse(p > 0, p * log2(p / m), 0)
jsd <- function(p, q) { m <- (p + q) / 2; (sum(plogp(p, m)) + sum(plogp(q, m))) / 2 }
ent <- function(p) -sum(ifelse(p > 0, p * log2(p), 0))
tvd <- function(p, q) sum(abs(p - q)) / 2
simbench <- function(p, q) {
  u <- rep(1 / length(q), length(q))
  if (tvd(u, q) == 0) NA else 100 * (1 - tvd(p, q) / tvd(u, q))
}
pmf <- function(k, zeros = 0) {
  v <- runif(k)^2
  if (zeros > 0) v[sample(k, zeros)] <- 0
  v / sum(v)
}
cases <- list()
add <- function(name, p, q) cases[[length(cases) + 1]] <<- data.frame(case = name,
  p = paste(fmt(p), collapse = ";"), q = paste(fmt(q), collapse = ";"),
  w1 = fmt(w1(p, q)), jsd = fmt(jsd(p, q)), entropy_p = fmt(ent(p)), entropy_q = fmt(ent(q)),
  tvd = fmt(tvd(p, q)), simbench = fmt(simbench(p, q)), alignment = fmt(1 - w1(p, q) / (length(p) - 1)))
for (k in 2:7) for (i in 1:4) add(sprintf("random_k%d_%d", k, i), pmf(k), pmf(k))
for (k in 3:7) add(sprintf("zeros_k%d", k), pmf(k, 1), pmf(k, k - 2))
for (k in 3:7) { p <- pmf(k); add(sprintf("same_k%d", k), p, p) }
add("disjoint_k6", c(0.5, 0.5, 0, 0, 0, 0), c(0, 0, 0.25, 0.25, 0.25, 0.25))
add("ends_k6", c(1, 0, 0, 0, 0, 0), c(0, 0, 0, 0, 0, 1))
add("uniform_vs_point_k5", rep(0.2, 5), c(0, 0, 1, 0, 0))
add("point_vs_uniform_k4", c(0, 1, 0, 0), rep(0.25, 4))
write.csv(do.call(rbind, cases), file.path(dir, "distances.csv"), row.names = FALSE)

# A non-integer matrix: expected scores of pmfs centred on bfi answers.
data(bfi, package = "psych")
x <- bfi[sample(nrow(bfi), 400), paste0("A", 1:5)]
x$A1 <- 7 - x$A1
e <- as.data.frame(lapply(x, function(col) sapply(col, function(a) {
  if (is.na(a)) return(NA_real_)
  w <- exp(-abs(1:6 - a) / runif(1, 0.3, 2))
  sum(w / sum(w) * 1:6)
})))
e[matrix(runif(nrow(e) * ncol(e)) < 0.05, nrow(e))] <- NA
write.csv(as.data.frame(lapply(e, fmt)), file.path(dir, "expected_A.csv"), row.names = FALSE, quote = FALSE)
e <- read.csv(file.path(dir, "expected_A.csv"))  # exactly what the Go test reads: 17 digits, empty = NA

out <- list()
put <- function(case, stat, item, value) out[[length(out) + 1]] <<- data.frame(case = case, stat = stat, item = item, value = fmt(value))
a <- suppressWarnings(suppressMessages(alpha(e, warnings = FALSE)))
kept <- rownames(a$item.stats)
put("expected_A", "n_items", "", length(kept))
put("expected_A", "raw_alpha", "", a$total$raw_alpha)
put("expected_A", "std_alpha", "", a$total$std.alpha)
put("expected_A", "average_r", "", a$total$average_r)
for (i in seq_along(kept)) {
  put("expected_A", "r_drop", kept[i], a$item.stats$r.drop[i])
  put("expected_A", "alpha_if_dropped", kept[i], a$alpha.drop$raw_alpha[i])
}
om <- suppressWarnings(suppressMessages(omega(e[, kept], nfactors = 1, fm = "pa", plot = FALSE)))
put("expected_A", "omega_total", "", om$omega.tot)
write.csv(do.call(rbind, out), file.path(dir, "reference_expected.csv"), row.names = FALSE)
cat(sprintf("psych %s: %d distance cases, alpha %.6f, omega %.6f on a non-integer matrix\n",
  packageVersion("psych"), length(cases), a$total$raw_alpha, om$omega.tot))
