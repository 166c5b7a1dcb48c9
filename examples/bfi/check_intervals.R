# Recomputes, with base R and psych, the human comparison of an export of examples/bfi: reference.csv's
# alignment, tvd, simbench, the uniform answer's figures, the humans' split-half distance and the perfect-model
# floors, and the 95 % bootstrap intervals of reference.csv (w1, alignment, jsd, simbench, model_mean,
# human_mean) and of reference_scales.csv (model and human alpha and omega_total, the means of w1, alignment and
# simbench over each scale's items and over every item, and the floors of those means and of tvd's), from the
# very resamples, splits and draws silico took, which results.WriteReferenceResamples writes to resamples.csv
# beside the outputs. Each interval is R's quantile(type = 7) at 0.025 and 0.975 of the resampled (or drawn)
# values that are defined.
#
#   Rscript examples/bfi/check_intervals.R OUTDIR [BFIDIR [GROUPS [SCALES]]]
#
# OUTDIR holds reference.csv, reference_scales.csv, distributions.csv and resamples.csv; BFIDIR (default
# examples/bfi) bfi.csv and items.csv. Alpha and omega are recomputed for the comma-separated GROUPS and SCALES
# only (default all and E: psych's omega() takes a tenth of a second, and each resample needs one); every item
# figure for every group. Definitions (docs/architecture.md): the distributions are over the six options (bfi
# has no option ignored for scale), W1 = sum |F_P - F_Q|, alignment = 1 - W1/5, tvd = sum |P - Q| / 2,
# simbench = 100 (1 - tvd(P, Q) / tvd(U, Q)) with U uniform; the model's distribution of a set of personas is
# their cells' mean (each persona's distributions.csv p weighted by its n_cells); a resample of respondents is
# their answers' table; the perfect model of a line gives n_cells answers drawn from the line's human_p, and draw
# b's distribution is the table of its answers (rows perfect:GROUP:ITEM:n_cells, 0-based option indices), its
# floor the mean over the draws of each figure against human_p and the draws' quantiles. Prints the largest
# difference; exits 1 when one is over 1e-9.
suppressPackageStartupMessages({library(psych); library(GPArotation)})
args <- commandArgs(TRUE)
out <- args[1]
bfidir <- if (length(args) >= 2) args[2] else "examples/bfi"
rel_groups <- if (length(args) >= 3) strsplit(args[3], ",")[[1]] else "all"
rel_scales <- if (length(args) >= 4) strsplit(args[4], ",")[[1]] else "E"
tol <- 1e-9

ref <- read.csv(file.path(out, "reference.csv"), colClasses = "character")
scl <- read.csv(file.path(out, "reference_scales.csv"), colClasses = "character")
dst <- read.csv(file.path(out, "distributions.csv"), colClasses = "character")
res <- read.csv(file.path(out, "resamples.csv"), colClasses = "character")
human <- read.csv(file.path(bfidir, "bfi.csv"), colClasses = "character")
items <- read.csv(file.path(bfidir, "items.csv"), colClasses = "character")
num <- function(v) ifelse(v == "", NA_real_, as.numeric(v))
indices <- function(label) {
  r <- res[res$label == label, ]
  lapply(r$indices[order(as.integer(r$b))], function(s) if (s == "") integer(0) else as.integer(strsplit(s, ";")[[1]]) + 1L)
}
score <- function(it) if (items$keyed[items$id == it] == "-") 7 - (1:6) else 1:6

personas <- unique(dst$persona_id)          # spec order
model <- unique(dst$model)
stopifnot(length(model) == 1)
# pd[[item]] is a personas x 6 matrix of p (NA where none), nc[[item]] the personas' n_cells.
pd <- list(); nc <- list()
for (it in items$id) {
  d <- dst[dst$item_id == it, ]
  m <- matrix(NA_real_, length(personas), 6)
  m[cbind(match(d$persona_id, personas), as.integer(d$option_id))] <- num(d$p)
  pd[[it]] <- m
  n <- integer(length(personas)); n[match(d$persona_id, personas)] <- as.integer(d$n_cells)
  nc[[it]] <- n
}
model_dist <- function(it, units) {
  n <- nc[[it]][units]; keep <- n > 0
  if (!any(keep)) return(NULL)
  colSums(pd[[it]][units[keep], , drop = FALSE] * n[keep]) / sum(n[keep])
}
human_dist <- function(it, rows) {
  a <- as.integer(human[rows, it]); a <- a[!is.na(a)]
  if (length(a) == 0) return(NULL)
  tabulate(a, 6) / length(a)
}
w1 <- function(p, q) sum(abs(cumsum(p) - cumsum(q))[1:5])
tvd <- function(p, q) sum(abs(p - q)) / 2
kl2 <- function(p, m) sum(ifelse(p > 0, p * log2(p / m), 0))
jsd <- function(p, q) { m <- (p + q) / 2; (kl2(p, m) + kl2(q, m)) / 2 }
u <- rep(1 / 6, 6)
simbench <- function(p, q) 100 * (1 - tvd(p, q) / tvd(u, q))
q7 <- function(v) { v <- v[!is.na(v)]; if (length(v) == 0) c(NA, NA) else unname(quantile(v, c(0.025, 0.975), type = 7)) }

worst <- 0; checked <- 0; bad <- 0
check <- function(what, got, want) {
  got <- num(got)
  if (is.na(want) && is.na(got)) return(invisible())
  d <- if (is.na(want) || is.na(got)) Inf else abs(got - want)
  checked <<- checked + 1
  worst <<- max(worst, d)
  if (d > tol) { bad <<- bad + 1; if (bad <= 20) cat(sprintf("%s: silico %s, R %.17g\n", what, got, want)) }
}

for (g in unique(ref$group)) {
  pres <- indices(paste0("persona:", g)); hres <- indices(paste0("respondent:", g))
  s1 <- indices(paste0("split1:", g)); s2 <- indices(paste0("split2:", g))
  B <- length(hres)
  vs <- list()   # each item's resampled figures, for the scales' means
  fs <- list()   # each item's perfect-model figures per draw, for the scales' floors
  for (it in items$id) {
    r <- ref[ref$item_id == it & ref$group == g, ]
    what <- paste(it, g)
    p <- num(strsplit(r$model_p, ";")[[1]]); q <- num(strsplit(r$human_p, ";")[[1]])
    check(paste(what, "alignment"), r$alignment, 1 - w1(p, q) / 5)
    check(paste(what, "tvd"), r$tvd, tvd(p, q))
    check(paste(what, "simbench"), r$simbench, simbench(p, q))
    check(paste(what, "uniform_w1"), r$uniform_w1, w1(u, q))
    check(paste(what, "uniform_alignment"), r$uniform_alignment, 1 - w1(u, q) / 5)
    check(paste(what, "uniform_tvd"), r$uniform_tvd, tvd(u, q))
    sw <- sapply(seq_len(B), function(b) w1(human_dist(it, s1[[b]]), human_dist(it, s2[[b]])))
    check(paste(what, "split_half_w1"), r$split_half_w1, mean(sw))
    check(paste(what, "split_half_alignment"), r$split_half_alignment, 1 - mean(sw) / 5)
    # The perfect model: n_cells answers drawn from the humans' distribution, per draw.
    m <- as.integer(r$n_cells)
    f <- matrix(NA_real_, B, 5, dimnames = list(NULL, c("w1", "alignment", "tvd", "simbench", "jsd")))
    if (m > 0 && r$human_p != "") {
      dr <- indices(paste0("perfect:", g, ":", it, ":", m))
      if (length(dr) != B) stop(sprintf("%s: %d perfect-model draws, want %d", what, length(dr), B))
      for (b in seq_len(B)) {
        pb <- tabulate(dr[[b]], 6) / m
        if (length(dr[[b]]) != m) stop(sprintf("%s: draw %d has %d answers, want %d", what, b, length(dr[[b]]), m))
        f[b, ] <- c(w1(pb, q), 1 - w1(pb, q) / 5, tvd(pb, q), simbench(pb, q), jsd(pb, q))
      }
    }
    for (c in colnames(f)) {
      d <- f[!is.na(f[, c]), c]
      check(paste(what, "perfect", c), r[[paste0("perfect_", c)]], if (length(d) == 0) NA else mean(d))
      iv <- q7(f[, c])
      check(paste(what, "perfect", c, "lo"), r[[paste0("perfect_", c, "_lo")]], iv[1])
      check(paste(what, "perfect", c, "hi"), r[[paste0("perfect_", c, "_hi")]], iv[2])
    }
    fs[[it]] <- f
    v <- matrix(NA_real_, B, 6, dimnames = list(NULL, c("w1", "alignment", "jsd", "simbench", "model_mean", "human_mean")))
    for (b in seq_len(B)) {
      pb <- model_dist(it, pres[[b]]); qb <- human_dist(it, hres[[b]])
      if (!is.null(pb)) v[b, "model_mean"] <- sum(pb * score(it))
      if (!is.null(qb)) v[b, "human_mean"] <- sum(qb * score(it))
      if (is.null(pb) || is.null(qb)) next
      v[b, "w1"] <- w1(pb, qb); v[b, "alignment"] <- 1 - w1(pb, qb) / 5
      v[b, "jsd"] <- jsd(pb, qb); v[b, "simbench"] <- simbench(pb, qb)
    }
    for (c in colnames(v)) {
      iv <- q7(v[, c])
      check(paste(what, c, "lo"), r[[paste0(c, "_lo")]], iv[1])
      check(paste(what, c, "hi"), r[[paste0(c, "_hi")]], iv[2])
    }
    vs[[it]] <- v
  }
  # reference_scales.csv's means of w1, alignment and simbench: in each resample the mean over the scale's items
  # (every item for scale "all") of the item's figure on that resample, over the items where it is defined.
  for (sc in c(unique(items$scale), "all")) {
    its <- if (sc == "all") items$id else items$id[items$scale == sc]
    r <- scl[scl$scale == sc & scl$group == g, ]
    for (c in c("w1", "alignment", "simbench")) {
      m <- sapply(its, function(it) vs[[it]][, c])
      mb <- apply(m, 1, function(x) if (all(is.na(x))) NA else mean(x[!is.na(x)]))
      iv <- q7(mb)
      check(paste(sc, g, "mean", c, "lo"), r[[paste0(c, "_lo")]], iv[1])
      check(paste(sc, g, "mean", c, "hi"), r[[paste0(c, "_hi")]], iv[2])
    }
    # The floors of the means: the mean over the items of each item's floor, and the quantiles of the mean over
    # the items on each draw (over the items where the figure is defined).
    for (c in c("w1", "alignment", "tvd", "simbench")) {
      m <- sapply(its, function(it) fs[[it]][, c])
      im <- apply(m, 2, function(x) if (all(is.na(x))) NA else mean(x[!is.na(x)]))
      check(paste(sc, g, "perfect", c), r[[paste0("perfect_", c)]], if (all(is.na(im))) NA else mean(im[!is.na(im)]))
      mb <- apply(m, 1, function(x) if (all(is.na(x))) NA else mean(x[!is.na(x)]))
      iv <- q7(mb)
      check(paste(sc, g, "perfect", c, "lo"), r[[paste0("perfect_", c, "_lo")]], iv[1])
      check(paste(sc, g, "perfect", c, "hi"), r[[paste0("perfect_", c, "_hi")]], iv[2])
    }
  }
}

# A resample whose total score does not vary (|sum(C)| <= 1e-12 tr(C) over the items with variance) has neither
# alpha nor omega in silico: alpha() would give an infinite alpha or a quotient of rounding errors.
flat_total <- function(x) {
  v <- apply(x, 2, var, na.rm = TRUE); x <- x[, !is.na(v) & v > 0, drop = FALSE]
  C <- cov(x, use = "pairwise"); ncol(x) >= 2 && abs(sum(C)) <= 1e-12 * sum(diag(C))
}
alpha_of <- function(x) if (flat_total(x)) NA else tryCatch(suppressWarnings(suppressMessages(alpha(x, warnings = FALSE)))$total$raw_alpha, error = function(e) NA)
omega_of <- function(x) if (flat_total(x)) NA else tryCatch(suppressWarnings(suppressMessages(omega(x, nfactors = 1, fm = "pa", plot = FALSE)))$omega.tot, error = function(e) NA)
for (g in rel_groups) for (sc in rel_scales) {
  pres <- indices(paste0("persona:", g)); hres <- indices(paste0("respondent:", g))
  cols <- items$id[items$scale == sc]
  hx <- sapply(cols, function(it) { a <- as.numeric(human[[it]]); if (items$keyed[items$id == it] == "-") 7 - a else a })
  mx <- sapply(cols, function(it) as.vector(pd[[it]] %*% score(it)))   # each persona's expected score
  r <- scl[scl$scale == sc & scl$group == g, ]
  for (side in c("model", "human")) {
    idx <- if (side == "model") pres else hres
    x <- if (side == "model") mx else hx
    a <- sapply(idx, function(i) alpha_of(x[i, , drop = FALSE]))
    o <- sapply(idx, function(i) omega_of(x[i, , drop = FALSE]))
    for (st in list(list("alpha", a), list("omega_total", o))) {
      iv <- q7(st[[2]])
      col <- paste0(side, "_", st[[1]])
      check(paste(sc, g, col, "lo"), r[[paste0(col, "_lo")]], iv[1])
      check(paste(sc, g, col, "hi"), r[[paste0(col, "_hi")]], iv[2])
    }
  }
}
cat(sprintf("checked %d figures, largest difference %.3g, %d over %g\n", checked, worst, bad, tol))
if (bad > 0) quit(status = 1)
