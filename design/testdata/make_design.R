# Reference values for the design package, computed in R independently of the Go code.
#
# Run from the repository root (base R only):
#   Rscript design/testdata/make_design.R [input dir] [output dir]     (both default to design/testdata)
#
# Reads (written by `go test ./design -run TestWriteInputs -update`):
#   observations.csv  one answered cell per line: model, scale, item, persona, seed, order, variant,
#                     prompt_variant, position (1-based shown position of the answer), k (options shown), score,
#                     expected (empty without probabilities), probs (canonical order, joined with ";").
#   resamples.csv     model, item, b, indices: the persona indices (0-based, into the group's persona ids sorted
#                     bytewise) of bootstrap resample b of the group, as design.ResampleIndices draws them.
# Writes:
#   order_bias_ref.csv  model, item, stat, value per model × item and model × "all" (every item of the model):
#                       share_j, mean_<order>, expected_<order>, diff (= mean_reversed − mean_as_written),
#                       primacy_recency, first_bias, diff_expected, each with _lo and _hi (quantile type 7 at
#                       0.025 and 0.975 over the resamples that define it), marginal_j. Empty = undefined.
#   variance_ref.csv    model, scale, stat, value: anova(lm(score ~ persona + item + variant + prompt_variant +
#                       order + seed)) (all factors; terms with one level left out) df and sum of squares per
#                       term and Residuals, and total_ss = sum((score − mean)²).
# The resampled statistics are computed on the resampled cells themselves (each drawn persona's cells repeated),
# not on weighted sums as Go does, so the two agree only if both are right.
args <- commandArgs(trailingOnly = TRUE)
indir <- if (length(args) >= 1) args[1] else "design/testdata"
outdir <- if (length(args) >= 2) args[2] else indir
fmt <- function(v) ifelse(is.na(v) | is.nan(v), "", sprintf("%.17g", v))

obs <- read.csv(file.path(indir, "observations.csv"), colClasses = c(seed = "character", variant = "character",
  prompt_variant = "character", probs = "character"), na.strings = "NA")
obs$expected <- suppressWarnings(as.numeric(obs$expected))
res <- read.csv(file.path(indir, "resamples.csv"), colClasses = "character")
orders <- c("as_written", "reversed", "shuffled")
nanull <- function(v) if (length(v) == 0) NA_real_ else mean(v)

stats <- function(d) {
  m <- sapply(orders, function(o) nanull(d$score[d$order == o]))
  e <- sapply(orders, function(o) nanull(d$expected[d$order == o & !is.na(d$expected)]))
  c(diff = unname(m["reversed"] - m["as_written"]),
    diff_expected = unname(e["reversed"] - e["as_written"]),
    primacy_recency = mean(d$position == 1) - mean(d$position == d$k),
    first_bias = mean(ifelse(d$k > 1, (d$k * (d$position == 1) - 1) / (d$k - 1), 0)))
}

out <- list()
add <- function(model, group, stat, value) out[[length(out) + 1]] <<- data.frame(model = model, group = group,
  stat = stat, value = fmt(value))
for (model in sort(unique(obs$model), method = "radix")) {
  dm <- obs[obs$model == model, ]
  for (item in c(sort(unique(dm$item), method = "radix"), "all")) {
    d <- if (item == "all") dm else dm[dm$item == item, ]
    k <- max(d$k)
    for (j in 1:k) add(model, item, paste0("share_", j), mean(d$position == j))
    for (o in orders) {
      add(model, item, paste0("mean_", o), nanull(d$score[d$order == o]))
      add(model, item, paste0("expected_", o), nanull(d$expected[d$order == o & !is.na(d$expected)]))
    }
    point <- stats(d)
    personas <- sort(unique(d$persona), method = "radix")
    byp <- split(d, d$persona)
    rs <- res[res$model == model & res$item == item, ]
    boot <- t(sapply(rs$indices, function(s) {
      ids <- personas[as.integer(strsplit(s, ";")[[1]]) + 1]
      stats(do.call(rbind, byp[ids]))
    }))
    for (s in names(point)) {
      add(model, item, s, point[[s]])
      v <- boot[, s]
      v <- v[!is.na(v)]
      q <- if (length(v) == 0) c(NA, NA) else quantile(v, c(0.025, 0.975), type = 7, names = FALSE)
      add(model, item, paste0(s, "_lo"), q[1])
      add(model, item, paste0(s, "_hi"), q[2])
    }
    if (item != "all") {
      dp <- d[d$probs != "", ]
      if (nrow(dp) > 0) {
        pm <- do.call(rbind, lapply(strsplit(dp$probs, ";"), as.numeric))
        labels <- sort(unique(dp$order), method = "radix")
        per <- sapply(labels, function(o) colMeans(pm[dp$order == o, , drop = FALSE]))
        marg <- rowMeans(matrix(per, ncol = length(labels)))
        for (j in seq_along(marg)) add(model, item, paste0("marginal_", j), marg[j])
      }
    }
  }
}
write.csv(do.call(rbind, out), file.path(outdir, "order_bias_ref.csv"), row.names = FALSE)

terms <- c("persona", "item", "variant", "prompt_variant", "order", "seed")
out <- list()
for (model in sort(unique(obs$model), method = "radix")) {
  for (scale in sort(unique(obs$scale[obs$model == model]), method = "radix")) {
    d <- obs[obs$model == model & obs$scale == scale, ]
    for (tm in terms) d[[tm]] <- factor(d[[tm]])
    used <- terms[sapply(terms, function(tm) nlevels(d[[tm]]) > 1)]
    a <- anova(lm(as.formula(paste("score ~", paste(used, collapse = " + "))), data = d))
    for (tm in rownames(a)) {
      add(model, scale, paste0(trimws(tm), "_df"), a[tm, "Df"])
      add(model, scale, paste0(trimws(tm), "_ss"), a[tm, "Sum Sq"])
    }
    add(model, scale, "total_ss", sum((d$score - mean(d$score))^2))
  }
}
write.csv(do.call(rbind, out), file.path(outdir, "variance_ref.csv"), row.names = FALSE)
