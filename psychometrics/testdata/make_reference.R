# Reference values for the psychometrics and results tests, computed with R psych.
#
# Run from the repository root after a quickstart run (go run ./cmd/starter run examples/quickstart/experiment.yaml):
#   Rscript psychometrics/testdata/make_reference.R out/<run id>/results.csv
# Needs R with psych and GPArotation (Debian: apt-get install r-cran-psych).
#
# Writes into psychometrics/testdata:
#   bfi_A.csv, bfi_C.csv      psych's bfi Agreeableness and Conscientiousness items (2800 respondents), reverse-keyed
#                             items scored min + max - x = 7 - x, NA kept as missing (empty in the CSV)
#   bfi_A_constant.csv        bfi_A.csv with a sixth item K that everyone answered 3
#   quickstart_cells.csv      the quickstart's cells: index, model, seed, scale, item_id, persona_id, status,
#                             option_id, score (empty when missing), tokens, cost, latency and attempts; results.csv's
#                             columns. The results and report tests replay it as a fixed run.
#   reference.csv             case, stat, item, value: psych's numbers, 17 significant digits
#
# Cases: bfi_A, bfi_C, bfi_A_constant; and for every model x seed x scale of the quickstart, "quickstart/<model>/<seed>/<scale>" on
# the personas x items matrix of scores, and "quickstart-missing/..." on the same matrix with every cell whose
# index is a multiple of 7 missing (as an unparsed or failed answer is).
#
# Statistics, all from psych 2.2.9 with its defaults unless said:
#   alpha(x):  raw_alpha, std_alpha, average_r (total), r_drop and alpha_if_dropped (raw_alpha of alpha.drop)
#              per item; n_items is the number of items alpha kept (items without variance are deleted)
#   omega(x[, kept items], nfactors = 1, fm = "pa"): omega_total (omega.tot)
suppressPackageStartupMessages({
  library(psych)
  library(GPArotation)
})

args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 1) stop("usage: Rscript psychometrics/testdata/make_reference.R out/<run id>/results.csv")
dir <- "psychometrics/testdata"
fmt <- function(v) ifelse(is.na(v), "", sprintf("%.17g", v))

out <- list()
add <- function(case, stat, item, value) {
  out[[length(out) + 1]] <<- data.frame(case = case, stat = stat, item = item, value = fmt(value))
}

reference <- function(case, x) {
  a <- suppressWarnings(suppressMessages(alpha(x, warnings = FALSE)))
  kept <- rownames(a$item.stats)
  add(case, "n_items", "", length(kept))
  add(case, "raw_alpha", "", a$total$raw_alpha)
  add(case, "std_alpha", "", a$total$std.alpha)
  add(case, "average_r", "", a$total$average_r)
  for (i in seq_along(kept)) {
    add(case, "r_drop", kept[i], a$item.stats$r.drop[i])
    if (length(kept) > 2) add(case, "alpha_if_dropped", kept[i], a$alpha.drop$raw_alpha[i])
  }
  om <- suppressWarnings(suppressMessages(omega(x[, kept], nfactors = 1, fm = "pa", plot = FALSE)))
  add(case, "omega_total", "", om$omega.tot)
}

# psych's bfi: items 1..6; A1, C4 and C5 are reverse-keyed.
data(bfi, package = "psych")
bfiA <- bfi[, paste0("A", 1:5)]
bfiA$A1 <- 7 - bfiA$A1
bfiC <- bfi[, paste0("C", 1:5)]
bfiC$C4 <- 7 - bfiC$C4
bfiC$C5 <- 7 - bfiC$C5
write.csv(bfiA, file.path(dir, "bfi_A.csv"), row.names = FALSE, na = "")
write.csv(bfiC, file.path(dir, "bfi_C.csv"), row.names = FALSE, na = "")
reference("bfi_A", bfiA)
reference("bfi_C", bfiC)
# An item everyone answered alike: psych's alpha() deletes it ("had no variance"), omega() is given the rest.
bfiK <- bfiA
bfiK$K <- 3
write.csv(bfiK, file.path(dir, "bfi_A_constant.csv"), row.names = FALSE, na = "")
reference("bfi_A_constant", bfiK)

# The quickstart: results.csv's score column is already reverse-keyed (min + max - weight), empty when missing.
res <- read.csv(args[1], colClasses = "character")
cells <- res[, c("index", "model", "seed", "scale", "item_id", "persona_id", "status", "option_id", "score",
                 "prompt_tokens", "completion_tokens", "cost_usd", "latency_ms", "attempts")]
write.csv(cells, file.path(dir, "quickstart_cells.csv"), row.names = FALSE, na = "")
cells$score <- as.numeric(ifelse(cells$score == "", NA, cells$score))
cells$index <- as.integer(cells$index)
personas <- unique(cells$persona_id)
for (variant in c("quickstart", "quickstart-missing")) {
  v <- cells
  if (variant == "quickstart-missing") v$score[v$index %% 7 == 0] <- NA
  for (m in unique(v$model)) for (s in unique(v$seed)) for (sc in unique(v$scale[v$scale != ""])) {
    part <- v[v$model == m & v$seed == s & v$scale == sc, ]
    items <- unique(part$item_id)
    x <- matrix(NA_real_, nrow = length(personas), ncol = length(items), dimnames = list(personas, items))
    for (k in seq_len(nrow(part))) x[part$persona_id[k], part$item_id[k]] <- part$score[k]
    reference(paste(variant, m, s, sc, sep = "/"), as.data.frame(x))
  }
}

write.csv(do.call(rbind, out), file.path(dir, "reference.csv"), row.names = FALSE)
cat(sprintf("psych %s: %d reference values\n", packageVersion("psych"), length(out)))
