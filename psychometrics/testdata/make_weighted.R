# Reference values for the weighted reliability, one-factor loadings, congruence and grouping tests, computed
# with R psych and base R independently of the Go code.
#
# Run from the repository root (needs R with psych and GPArotation; Debian: apt-get install r-cran-psych
# r-cran-gparotation):
#   Rscript psychometrics/testdata/make_weighted.R [output dir]     (default psychometrics/testdata)
#
# Reads psychometrics/testdata/bfi_A.csv, bfi_C.csv and expected_A.csv (written by make_reference.R and
# make_distances.R). Writes into the output dir (the weights are drawn from a fixed seed, so every run writes
# the same files):
#   weights.csv           w: one weight per row of bfi_A.csv (the first 400 also weigh expected_A.csv's rows),
#                         uniform on [0.2, 3] at 17 significant digits, 40 of them exactly 0.
#   grouping.csv          y, gender, education, band, w: per bfi respondent the mean of the five reverse-keyed
#                         Agreeableness answers (empty where one is missing), psych bfi's gender, education
#                         (empty for NA) and an age band, and the weight of weights.csv.
#   reference_weighted.csv  case, stat, item, value in the format of reference.csv:
#     "weighted/<matrix>" and "unit/<matrix>" (all weights 1) for bfi_A, bfi_C, expected_A and bfi_A_complete
#     (the rows of bfi_A without a missing answer):
#       cov, cor (item "i|j", i <= j): the weighted pairwise matrices, built pair by pair with
#         cov.wt(x[rows, c(i, j)], w[rows], method = "unbiased", cor = TRUE) over the rows that answered both and
#         weigh more than 0 (the diagonal: cov.wt of the rows that answered the item); on bfi_A_complete also
#         cov_wt and cor_wt from one cov.wt call on the whole matrix.
#       n_items, raw_alpha, std_alpha, average_r, r_drop and alpha_if_dropped per item: psych's alpha() on that
#         covariance matrix; omega_total: omega(cor, nfactors = 1, fm = "pa")$omega.tot; loading per item:
#         fa(cor, nfactors = 1, fm = "pa")$loadings.
#     "congruence/<x>~<y>": congruence, factor.congruence (digits = 17) of two of these loading vectors (the
#       test reads them from this file).
#     "grouping/<g>" and "grouping/<g>/weighted" for g in gender, education, band, gender_band (both joined):
#       r2 = summary(lm(y ~ factor(g), weights = w))$r.squared over the rows with y and g present;
#     "moments" and "moments/weighted": mean = weighted.mean(y, w), sd = sqrt(cov.wt(cbind(y), w,
#       method = "unbiased")$cov) over the rows with y present and w > 0.
suppressPackageStartupMessages({
  library(psych)
  library(GPArotation)
})
dir <- "psychometrics/testdata"
args <- commandArgs(trailingOnly = TRUE)
outdir <- if (length(args) >= 1) args[1] else dir
fmt <- function(v) ifelse(is.na(v), "", sprintf("%.17g", v))
set.seed(20261203)

bfiA <- read.csv(file.path(dir, "bfi_A.csv"))
bfiC <- read.csv(file.path(dir, "bfi_C.csv"))
expA <- read.csv(file.path(dir, "expected_A.csv"))
w <- runif(nrow(bfiA), 0.2, 3)
w[sample(length(w), 40)] <- 0
write.csv(data.frame(w = fmt(w)), file.path(outdir, "weights.csv"), row.names = FALSE, quote = FALSE)
w <- read.csv(file.path(outdir, "weights.csv"))$w  # exactly what the Go test reads

out <- list()
put <- function(case, stat, item, value) out[[length(out) + 1]] <<- data.frame(case = case, stat = stat,
  item = item, value = fmt(value))

# The weighted pairwise covariance and correlation, pair by pair.
pairwise <- function(x, w) {
  k <- ncol(x)
  C <- R <- matrix(NA_real_, k, k, dimnames = list(names(x), names(x)))
  for (i in 1:k) for (j in i:k) {
    rows <- !is.na(x[, i]) & !is.na(x[, j]) & w > 0
    if (sum(rows) < 2) next
    cw <- cov.wt(as.matrix(x[rows, c(i, j)]), wt = w[rows], method = "unbiased", cor = TRUE)
    C[i, j] <- C[j, i] <- cw$cov[1, 2]
    R[i, j] <- R[j, i] <- if (i == j) 1 else cw$cor[1, 2]
  }
  list(cov = C, cor = R)
}
loadings <- list()
reference <- function(case, x, w) {
  m <- pairwise(x, w)
  k <- ncol(x)
  for (i in 1:k) for (j in i:k) {
    put(case, "cov", paste0(names(x)[i], "|", names(x)[j]), m$cov[i, j])
    put(case, "cor", paste0(names(x)[i], "|", names(x)[j]), m$cor[i, j])
  }
  a <- suppressWarnings(suppressMessages(alpha(m$cov, warnings = FALSE)))
  kept <- rownames(a$item.stats)
  put(case, "n_items", "", length(kept))
  put(case, "raw_alpha", "", a$total$raw_alpha)
  put(case, "std_alpha", "", a$total$std.alpha)
  put(case, "average_r", "", a$total$average_r)
  for (i in seq_along(kept)) {
    put(case, "r_drop", kept[i], a$item.stats$r.drop[i])
    put(case, "alpha_if_dropped", kept[i], a$alpha.drop$raw_alpha[i])
  }
  r <- m$cor[kept, kept]
  om <- suppressWarnings(suppressMessages(omega(r, nfactors = 1, fm = "pa", plot = FALSE)))
  put(case, "omega_total", "", om$omega.tot)
  l <- suppressWarnings(suppressMessages(fa(r, nfactors = 1, fm = "pa")))$loadings
  l <- setNames(as.vector(l), kept)
  for (i in kept) put(case, "loading", i, l[[i]])
  loadings[[case]] <<- l
  m
}
complete <- bfiA[complete.cases(bfiA), ]
wc <- w[complete.cases(bfiA)]
for (v in c("weighted", "unit")) {
  wt <- function(n) if (v == "weighted") w[1:n] else rep(1, n)
  reference(paste0(v, "/bfi_A"), bfiA, wt(nrow(bfiA)))
  reference(paste0(v, "/bfi_C"), bfiC, wt(nrow(bfiC)))
  reference(paste0(v, "/expected_A"), expA, wt(nrow(expA)))
  wcv <- if (v == "weighted") wc else rep(1, nrow(complete))
  reference(paste0(v, "/bfi_A_complete"), complete, wcv)
  cw <- cov.wt(as.matrix(complete), wt = wcv, method = "unbiased", cor = TRUE)
  for (i in 1:5) for (j in i:5) {
    put(paste0(v, "/bfi_A_complete"), "cov_wt", paste0(names(complete)[i], "|", names(complete)[j]), cw$cov[i, j])
    put(paste0(v, "/bfi_A_complete"), "cor_wt", paste0(names(complete)[i], "|", names(complete)[j]), cw$cor[i, j])
  }
}
for (p in list(c("unit/bfi_A", "unit/bfi_C"), c("weighted/bfi_A", "unit/bfi_A"), c("unit/bfi_A", "unit/expected_A"),
               c("weighted/bfi_C", "unit/bfi_A_complete"))) {
  cg <- factor.congruence(matrix(loadings[[p[1]]]), matrix(loadings[[p[2]]]), digits = 17)
  put(paste0("congruence/", p[1], "~", p[2]), "congruence", "", cg[1, 1])
}

# Grouping: R² of a factor, weighted and not; weighted mean and SD.
data(bfi, package = "psych")
y <- rowMeans(bfiA)
band <- cut(bfi$age, c(0, 17, 24, 34, 49, Inf), labels = c("0-17", "18-24", "25-34", "35-49", "50+"))
g <- data.frame(y = y, gender = as.character(bfi$gender), education = as.character(bfi$education),
  band = as.character(band), w = w)
write.csv(data.frame(y = fmt(g$y), gender = g$gender, education = ifelse(is.na(g$education), "", g$education),
  band = g$band, w = fmt(w)), file.path(outdir, "grouping.csv"), row.names = FALSE, quote = FALSE)
g <- read.csv(file.path(outdir, "grouping.csv"), colClasses = c(gender = "character", education = "character",
  band = "character"), na.strings = "")
g$gender_band <- paste(g$gender, g$band)
for (f in c("gender", "education", "band", "gender_band")) {
  d <- g[!is.na(g$y) & !is.na(g[[f]]), ]
  put(paste0("grouping/", f), "r2", "", summary(lm(d$y ~ factor(d[[f]])))$r.squared)
  put(paste0("grouping/", f, "/weighted"), "r2", "", summary(lm(d$y ~ factor(d[[f]]), weights = d$w))$r.squared)
}
d <- g[!is.na(g$y), ]
put("moments", "mean", "", mean(d$y))
put("moments", "sd", "", sd(d$y))
d <- d[d$w > 0, ]
put("moments/weighted", "mean", "", weighted.mean(d$y, d$w))
put("moments/weighted", "sd", "", sqrt(cov.wt(cbind(d$y), wt = d$w, method = "unbiased")$cov[1, 1]))

write.csv(do.call(rbind, out), file.path(outdir, "reference_weighted.csv"), row.names = FALSE)
cat(sprintf("psych %s: %d values\n", packageVersion("psych"), length(out)))
