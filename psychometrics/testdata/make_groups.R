# Reference values for omega where psych refuses it: the personas x items matrices of examples/bfi's
# reference_scales.csv, whose age bands have 2 or 4 personas for 5 items (a singular correlation matrix).
#
# Run from the repository root after a run of examples/bfi (go run ./cmd/starter run examples/bfi/experiment.yaml;
# the simulator's answers depend only on the model, seed and prompt, so every run gives the same file):
#   Rscript psychometrics/testdata/make_groups.R out/<run id>
# Needs R with psych, GPArotation and yaml (Debian: apt-get install r-cran-psych r-cran-gparotation r-cran-yaml).
#
# Writes into psychometrics/testdata:
#   bfi_groups.csv        case, persona, item, value: for every scale x group of examples/bfi ("A/age_band=0-17"),
#                         each persona's expected score on each item, sum(p * score) / sum(p) over the persona's
#                         answer distribution in distributions.csv (score 7 - option for the "-" keyed items of
#                         items.csv), 17 significant digits; and the same matrix with every cell whose row-major
#                         index (0-based) is a multiple of 7 missing, case "<scale>/<group>/missing" (empty value):
#                         pairwise correlations over different personas, so some matrices are not positive definite.
#   reference_groups.csv  case, stat, item, value in the format of reference.csv: n_items and raw_alpha of
#                         alpha(x); omega_total of omega(x[, kept], nfactors = 1, fm = "pa"), empty where omega()
#                         stops with an error, and omega_refused (1 there, else 0); smc_sum, the sum of
#                         smc(cor(x, use = "pairwise")), the principal-axis fit's starting communalities (fa() stops
#                         when they sum to 0.001 or less); pinv_min_abs_diag, the smallest |diag(Pinv(R))|, which is
#                         zero to rounding where an SMC is decided by the sign of rounding error.
#                         And cases "expected/<model>/<seed>/<scale>": raw_alpha and omega_total on the personas x
#                         items matrix of results.csv's expected_score column, reliability.csv's alpha_expected
#                         and omega_expected.
suppressPackageStartupMessages({
  library(psych)
  library(GPArotation)
  library(yaml)
})
args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 1) stop("usage: Rscript psychometrics/testdata/make_groups.R out/<run id>")
dir <- "psychometrics/testdata"
fmt <- function(v) ifelse(is.na(v), "", sprintf("%.17g", v))

spec <- yaml::read_yaml("examples/bfi/experiment.yaml")
items <- read.csv("examples/bfi/items.csv", colClasses = "character")
dist <- read.csv(file.path(args[1], "distributions.csv"), colClasses = "character")
dist$p <- as.numeric(dist$p)
personas <- sapply(spec$personas, function(p) p$id)
attr <- function(name) sapply(spec$personas, function(p) as.character(p$attributes[[name]]))
groups <- list(all = rep(TRUE, length(personas)))
for (col in c("gender", "age_band")) {
  v <- attr(col)
  for (g in sort(unique(v))) groups[[paste0(col, "=", g)]] <- v == g
}

expected <- function(item, persona) {
  d <- dist[dist$item_id == item & dist$persona_id == persona, ]
  score <- as.numeric(d$option_id)
  if (items$keyed[items$id == item] == "-") score <- 7 - score
  sum(d$p * score) / sum(d$p)
}

cells <- list()
out <- list()
add <- function(case, stat, value) out[[length(out) + 1]] <<- data.frame(case = case, stat = stat, item = "", value = fmt(value))
for (sc in unique(items$scale)) {
  its <- items$id[items$scale == sc]
  for (g in names(groups)) {
    ps <- personas[groups[[g]]]
    x <- matrix(NA_real_, length(ps), length(its), dimnames = list(ps, its))
    for (i in seq_along(ps)) for (j in seq_along(its)) x[i, j] <- expected(its[j], ps[i])
    for (variant in c("", "/missing")) {
      y <- x
      if (variant == "/missing") y[t(matrix(seq_along(y) - 1, ncol(y), nrow(y))) %% 7 == 0] <- NA
      case <- paste0(sc, "/", g, variant)
      cells[[length(cells) + 1]] <- data.frame(case = case, persona = rep(ps, times = length(its)),
                                               item = rep(its, each = length(ps)), value = fmt(as.vector(y)))
      y <- as.data.frame(y)
      a <- suppressWarnings(suppressMessages(alpha(y, warnings = FALSE)))
      kept <- rownames(a$item.stats)
      om <- tryCatch(suppressWarnings(suppressMessages(omega(y[, kept], nfactors = 1, fm = "pa", plot = FALSE)))$omega.tot,
                     error = function(e) NA_real_)
      r <- cor(y[, kept], use = "pairwise")
      add(case, "n_items", length(kept))
      add(case, "raw_alpha", a$total$raw_alpha)
      add(case, "omega_total", om)
      add(case, "omega_refused", as.numeric(is.na(om)))
      add(case, "smc_sum", sum(suppressWarnings(suppressMessages(smc(r)))))
      add(case, "pinv_min_abs_diag", min(abs(diag(Pinv(r)))))
    }
  }
}
# The expected scores per seed, as results.csv writes them (every digit).
res <- read.csv(file.path(args[1], "results.csv"), colClasses = "character")
res$expected_score <- as.numeric(ifelse(res$expected_score == "", NA, res$expected_score))
# reliability.csv is computed on the cells that show the options as written (a balanced run asks each twice).
if (!is.null(res$order)) res <- res[res$order %in% c("", "as_written"), ]
for (m in unique(res$model)) for (sd in unique(res$seed)) for (sc in unique(items$scale)) {
  part <- res[res$model == m & res$seed == sd & res$scale == sc, ]
  its <- items$id[items$scale == sc]
  x <- matrix(NA_real_, length(personas), length(its), dimnames = list(personas, its))
  for (k in seq_len(nrow(part))) x[part$persona_id[k], part$item_id[k]] <- part$expected_score[k]
  x <- as.data.frame(x)
  a <- suppressWarnings(suppressMessages(alpha(x, warnings = FALSE)))
  kept <- rownames(a$item.stats)
  om <- suppressWarnings(suppressMessages(omega(x[, kept], nfactors = 1, fm = "pa", plot = FALSE)))$omega.tot
  case <- paste("expected", m, sd, sc, sep = "/")
  add(case, "raw_alpha", a$total$raw_alpha)
  add(case, "omega_total", om)
}

write.csv(do.call(rbind, cells), file.path(dir, "bfi_groups.csv"), row.names = FALSE)
write.csv(do.call(rbind, out), file.path(dir, "reference_groups.csv"), row.names = FALSE)
cat(sprintf("psych %s: %d lines, %d cases where omega() stops\n", packageVersion("psych"), length(out),
            sum(sapply(out, function(o) o$stat == "omega_refused" && o$value == "1"))))
