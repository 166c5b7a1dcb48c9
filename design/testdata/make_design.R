# Reference values for the design package, computed in R independently of the Go code.
#
# Run from the repository root (base R only):
#   Rscript design/testdata/make_design.R [input dir] [output dir]     (both default to design/testdata)
#
# Reads (written by `go test ./design -run TestWriteInputs -update`):
#   observations.csv  one answered cell per line: model, scale, item, persona, seed, order, variant,
#                     prompt_variant, position (1-based shown position of the answer), k (options shown), answer
#                     and first (0-based questionnaire indices of the answer and of the option shown first), score
#                     (reverse keying applied), weight (the answer's option weight as written), expected_weight
#                     (empty without probabilities).
#   resamples.csv     model, item, b, indices: the persona indices (0-based, into the group's persona ids sorted
#                     bytewise) of bootstrap resample b of the group, as design.ResampleIndices draws them.
# Writes:
#   order_bias_ref.csv  model, item, stat, value per model × item and model × "all" (every item of the model):
#                       share_j, weight_<order>, expected_weight_<order>, weight_diff (= weight_reversed −
#                       weight_as_written), primacy_recency, first_effect, expected_weight_diff, each with _lo and
#                       _hi (quantile type 7 at 0.025 and 0.975 over the resamples that define it). Empty =
#                       undefined.
#   variance_ref.csv    model, scale, stat, value: anova(lm(score ~ persona + item + variant + prompt_variant +
#                       order + seed)) (all factors; terms with one level left out) df and sum of squares per
#                       term and Residuals, and total_ss = sum((score − mean)²).
# first_effect is written from its definition: for every item of the line and option c shown first in some cells
# and elsewhere in others, c's share of the answers when shown first less its share when shown elsewhere,
# averaged over those options weighted by the cells that showed them first.
# The resampled statistics are computed on the resampled cells themselves (each drawn persona's cells repeated),
# not on weighted sums as Go does, so the two agree only if both are right.
args <- commandArgs(trailingOnly = TRUE)
indir <- if (length(args) >= 1) args[1] else "design/testdata"
outdir <- if (length(args) >= 2) args[2] else indir
fmt <- function(v) ifelse(is.na(v) | is.nan(v), "", sprintf("%.17g", v))

obs <- read.csv(file.path(indir, "observations.csv"), colClasses = c(seed = "character", variant = "character",
  prompt_variant = "character"), na.strings = "NA")
obs$expected_weight <- suppressWarnings(as.numeric(obs$expected_weight))
res <- read.csv(file.path(indir, "resamples.csv"), colClasses = "character")
orders <- c("as_written", "reversed", "shuffled")
nanull <- function(v) if (length(v) == 0) NA_real_ else mean(v)

first_effect <- function(d) {
  effect <- c()
  shown_first <- c()
  for (it in unique(d$item)) {
    di <- d[d$item == it, ]
    for (c in 0:(max(di$k) - 1)) {
      first <- di$first == c
      if (!any(first) || all(first)) next
      effect <- c(effect, mean(di$answer[first] == c) - mean(di$answer[!first] == c))
      shown_first <- c(shown_first, sum(first))
    }
  }
  if (length(effect) == 0) NA_real_ else weighted.mean(effect, shown_first)
}

stats <- function(d) {
  m <- sapply(orders, function(o) nanull(d$weight[d$order == o]))
  e <- sapply(orders, function(o) nanull(d$expected_weight[d$order == o & !is.na(d$expected_weight)]))
  c(weight_diff = unname(m["reversed"] - m["as_written"]),
    expected_weight_diff = unname(e["reversed"] - e["as_written"]),
    primacy_recency = mean(d$position == 1) - mean(d$position == d$k),
    first_effect = first_effect(d))
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
      add(model, item, paste0("weight_", o), nanull(d$weight[d$order == o]))
      add(model, item, paste0("expected_weight_", o), nanull(d$expected_weight[d$order == o & !is.na(d$expected_weight)]))
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
