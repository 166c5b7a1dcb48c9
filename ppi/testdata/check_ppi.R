# An independent check of package ppi: recomputes, in base R, every figure Go wrote, from the inputs Go wrote,
# with the formulas of the papers (prediction-powered inference, Angelopoulos et al. 2023; PPI++, Angelopoulos,
# Duchi & Zrnic 2023; the mixed subjects design and its power analysis, Broska, Howes & van Loon 2025) and the
# definitions the package documents (sample variances with n − 1, 95 % normal intervals, λ clipped to [0, 1],
# one λ per option, the finite-population correction s²_Y/M of the self-check). It does not follow the Go
# code's steps: the power analysis here tries every n from 10 (a mixed design asks at least 10 people), where Go
# walks outward from the continuous optimum.
#
#   Rscript ppi/testdata/check_ppi.R DIR
#
# DIR holds (written by ppi's TestAgainstR):
#   means.csv      case, set (labeled | unlabeled), y, f: one answer per row; y is empty on unlabeled rows.
#   shares.csv     case, k, set, y, f: the same with option indices 0 … k − 1.
#   diffs.csv      diff, a, b: the difference of means cases a − b.
#   plans.csv      case, kind (halfwidth | budget), sigma2, rho, ch, cf, target.
#   selfcheck.csv  case, y, f: M people in order (person i on the i-th row of the case, from 0).
#   subsets.csv    label, b, indices: each self-check draw's labeled people (0-based, ";"-joined).
#   go.csv         case, figure, value: what Go computed ("NA" where it has no number).
# Its figures are compared with Go's by rcheck/compare.R, sourced from this file's path: exits 0 and prints
# "every figure agrees" when every figure of go.csv equals R's to 1e-9 (relative above 1)
# and neither side has a figure the other lacks; otherwise lists the differences and exits 1.
args <- commandArgs(trailingOnly = TRUE)
dir <- if (length(args) >= 1) args[1] else "."
rd <- function(name) read.csv(file.path(dir, name), colClasses = "character")
z <- qnorm(0.975)
here <- dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1]))
source(file.path(here, "..", "..", "rcheck", "compare.R"))

interval <- function(prefix, est, v) {
  h <- z * sqrt(v)
  out <- list(est, v, est - h, est + h)
  names(out) <- paste0(prefix, c("_est", "_var", "_lo", "_hi"))
  out
}

# The mixed subjects estimate of a mean from labeled (y, f) and unlabeled fu.
estimate <- function(y, f, fu) {
  n <- length(y); N <- length(fu)
  same <- function(x) length(unique(x)) == 1
  pooled <- c(f, fu)
  rho <- if (same(y) || same(f)) NA else cor(y, f)
  lam_raw <- if (same(pooled)) NA else {
    cv <- if (same(y) || same(f)) 0 else cov(y, f)
    cv / ((1 + n / N) * var(pooled))
  }
  lam <- if (is.na(lam_raw)) 0 else min(1, max(0, lam_raw))
  svar <- function(x) if (same(x)) 0 else var(x)
  ppi <- function(l) list(mean(y) + l * (mean(fu) - mean(f)), svar(y - l * f) / n + l^2 * svar(fu) / N)
  tuned <- ppi(lam); classical <- ppi(1)
  neff <- if (is.na(rho)) NA else n / (1 - max(rho, 0)^2 * N / (N + n))
  c(list(n = n, N = N),
    interval("humans", mean(y), svar(y) / n),
    interval("ppi", tuned[[1]], tuned[[2]]),
    interval("classical", classical[[1]], classical[[2]]),
    list(model_only = mean(pooled), lambda = lam, lambda_raw = lam_raw, rho = rho, n_eff = neff,
      flag_few = n < 10,
      flag_weak = is.na(rho) || n <= 2 || rho < 1 / sqrt(n - 2),
      flag_const_humans = same(y),
      flag_const_model = same(pooled),
      flag_clipped = !is.na(lam_raw) && (lam_raw < 0 || lam_raw > 1)))
}

means <- rd("means.csv")
est <- list()
for (case in unique(means$case)) {
  d <- means[means$case == case, ]
  l <- d$set == "labeled"
  est[[case]] <- estimate(as.numeric(d$y[l]), as.numeric(d$f[l]), as.numeric(d$f[!l]))
  put(case, est[[case]])
}

shares <- rd("shares.csv")
for (case in unique(shares$case)) {
  d <- shares[shares$case == case, ]
  k <- as.integer(d$k[1]); l <- d$set == "labeled"
  for (opt in 0:(k - 1)) {
    put(sprintf("%s/%d", case, opt), estimate(as.numeric(d$y[l] == opt), as.numeric(d$f[l] == opt),
      as.numeric(d$f[!l] == opt)))
  }
}

diffs <- rd("diffs.csv")
for (i in seq_len(nrow(diffs))) {
  a <- est[[diffs$a[i]]]; b <- est[[diffs$b[i]]]
  out <- list(model_only = a$model_only - b$model_only)
  for (p in c("humans", "ppi", "classical")) {
    g <- function(x, s) x[[paste0(p, s)]]
    out <- c(out, interval(p, g(a, "_est") - g(b, "_est"), g(a, "_var") + g(b, "_var")))
  }
  put(diffs$diff[i], out)
}

# The power analysis by brute force: every n, with the variance of the tuned PPI++ estimate
# σ²/n · (1 − ρ²·N/(n + N)) written as σ²(1 − ρ²)/n + σ²ρ²/(n + N), ρ taken at least 0.
plans <- rd("plans.csv")
for (i in seq_len(nrow(plans))) {
  p <- plans[i, ]
  s2 <- as.numeric(p$sigma2); r <- max(as.numeric(p$rho), 0); ch <- as.numeric(p$ch); cf <- as.numeric(p$cf)
  target <- as.numeric(p$target)
  a <- s2 * (1 - r^2); b <- s2 * r^2
  if (p$kind == "halfwidth") {
    v <- (target / z)^2
    nh <- ceiling(s2 / v)
    n <- 10:max(10, nh)
    m <- if (b == 0) n else pmax(n, ceiling(b / (v - a / n)))
    ok <- if (b == 0) a / n <= v else a / n < v
    n <- n[ok]; m <- m[ok]
    cost <- ch * n + cf * m; hw <- z * sqrt(a / n + b / m)
    best <- order(cost, hw, n)[1]
  } else {
    nh <- floor(target / ch)
    n <- 10:floor(target / (ch + cf))
    m <- if (b == 0) n else pmax(n, floor((target - ch * n) / cf))
    cost <- ch * n + cf * m; hw <- z * sqrt(a / n + b / m)
    best <- order(hw, cost, n)[1]
  }
  humans_hw <- z * sqrt(s2 / nh)
  pays <- if (p$kind == "halfwidth") cost[best] < ch * nh else hw[best] < humans_hw
  gamma <- cf / ch
  put(p$case, list(humans_n = nh, humans_N = 0, humans_cost = ch * nh, humans_hw = humans_hw,
    mixed_n = n[best], mixed_N = m[best] - n[best], mixed_cost = cost[best], mixed_hw = hw[best],
    pays = pays, threshold = 2 * sqrt(gamma) / (1 + gamma)))
}

# The self-check: each draw's labeled people against the mean of all M, intervals with the
# finite-population correction (variance less s²_Y/M, at least 0).
sc <- rd("selfcheck.csv")
subsets <- rd("subsets.csv")
for (case in unique(sc$case)) {
  d <- sc[sc$case == case, ]
  y <- as.numeric(d$y); f <- as.numeric(d$f); M <- length(y); truth <- mean(y)
  ds <- subsets[subsets$label == case, ]
  ds <- ds[order(as.integer(ds$b)), ]
  rows <- lapply(seq_len(nrow(ds)), function(b) {
    lab <- as.integer(strsplit(ds$indices[b], ";", fixed = TRUE)[[1]]) + 1
    e <- estimate(y[lab], f[lab], f[-lab])
    s2 <- if (length(unique(y[lab])) == 1) 0 else var(y[lab])
    ppi <- interval("ppi", e$ppi_est, max(e$ppi_var - s2 / M, 0))
    hum <- interval("humans", e$humans_est, max(e$humans_var - s2 / M, 0))
    put(sprintf("%s/%d", case, b), c(ppi[c("ppi_lo", "ppi_hi")], hum[c("humans_lo", "humans_hi")],
      list(ppi_est = e$ppi_est, lambda = e$lambda, rho = e$rho)))
    data.frame(cov_ppi = ppi$ppi_lo <= truth && truth <= ppi$ppi_hi,
      cov_h = hum$humans_lo <= truth && truth <= hum$humans_hi,
      w_ppi = ppi$ppi_hi - ppi$ppi_lo, w_h = hum$humans_hi - hum$humans_lo,
      bias = e$ppi_est - truth, neff = e$n_eff)
  })
  r <- do.call(rbind, rows)
  put(case, list(people = M, truth = truth, ppi_coverage = mean(r$cov_ppi), humans_coverage = mean(r$cov_h),
    ppi_width = mean(r$w_ppi), humans_width = mean(r$w_h), ppi_bias = mean(r$bias),
    model_only_bias = mean(f) - truth, mean_neff = if (all(is.na(r$neff))) NA else mean(r$neff, na.rm = TRUE)))
}

compare_figures(dir)
