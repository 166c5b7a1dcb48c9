# Recomputes, independently of silico, every figure of an examples/bfi run's comparison with the humans, from the
# run's per-cell answers (results.csv), the raw human answers (bfi.csv) and the spec's scoring, with base R and
# psych, and compares each with what the run wrote; and order_bias.csv's point values from results.csv.
#
# Run from the repository root after a run of examples/bfi:
#   go run ./cmd/starter run examples/bfi/experiment.yaml --output /tmp/bfi
#   Rscript examples/bfi/check.R /tmp/bfi [examples/bfi/experiment.yaml]
# Needs R with psych, GPArotation and yaml (Debian: apt-get install r-base-core r-cran-psych r-cran-gparotation
# r-cran-yaml).
#
# Every number must agree to `tol`; a cell silico leaves empty must be one R leaves empty (psych stops, or there is
# nothing to compute), and the reverse. Each comparison prints one line: file, column, the largest absolute
# difference, the rows compared (and how many are empty on both sides). The script exits non-zero when any
# comparison fails, after printing every failure.
#
# Layout: one section of shared machinery (reading, comparing, the spec's scoring, the model's distributions
# rebuilt from results.csv), then one function per output file, check_<file>(), each called once at the end. A
# new output gets a function of its own and a line in the list at the bottom.
suppressPackageStartupMessages({
  library(psych)
  library(GPArotation)
  library(yaml)
})

# ---- shared ------------------------------------------------------------------------------------------------------

# The one tolerance of every comparison: outputs are written as shortest round-trip floats, so the only
# differences left are those of two implementations' rounding.
tol <- 1e-9

args <- commandArgs(trailingOnly = TRUE)
if (length(args) < 1 || length(args) > 2) {
  stop("usage: Rscript examples/bfi/check.R <run directory> [experiment.yaml]")
}
run_dir <- args[1]
spec_path <- if (length(args) == 2) args[2] else "examples/bfi/experiment.yaml"
spec_dir <- dirname(spec_path)

# Comparisons record into this environment, which the end of the script reads: failures (messages) and the worst
# difference of all.
state <- new.env()
state$failures <- character(0)
state$worst <- list(diff = 0, what = "none")

fail <- function(msg) state$failures <- c(state$failures, msg)

read_out <- function(name) {
  path <- file.path(run_dir, name)
  if (!file.exists(path)) stop(sprintf("%s: no such file", path))
  read.csv(path, colClasses = "character", na.strings = character(0), check.names = FALSE)
}

# num reads CSV text as numbers, NA where a cell is empty.
num <- function(x) suppressWarnings(as.numeric(ifelse(x == "", NA, x)))

# compare_num holds the text column got (as written) to the numbers want (NA: must be empty), row by row; key
# names the rows in messages. Text that does not parse as a number is a failure, as is emptiness on one side only.
compare_num <- function(file, column, key, got, want) {
  stopifnot(length(got) == length(want), length(key) == length(got))
  g <- num(got)
  bad_text <- got != "" & is.na(g)
  empty_got <- got == ""
  empty_want <- is.na(want)
  mismatch <- which(bad_text | empty_got != empty_want)
  both <- which(!empty_got & !empty_want & !bad_text)
  d <- abs(g[both] - want[both])
  worst <- if (length(d) > 0) max(d) else 0
  over <- both[d > tol]
  cat(sprintf("%-22s %-20s max |diff| %.3g over %d rows (%d empty on both)\n", file, column, worst, length(both),
              sum(empty_got & empty_want)))
  if (worst > state$worst$diff) state$worst <- list(diff = worst, what = paste(file, column))
  for (i in head(mismatch, 10)) {
    fail(sprintf("%s %s %s: silico %s, R %s", file, column, key[i], if (got[i] == "") "empty" else got[i],
                 if (is.na(want[i])) "empty" else sprintf("%.17g", want[i])))
  }
  for (i in head(over, 10)) {
    fail(sprintf("%s %s %s: silico %s, R %.17g (diff %.3g)", file, column, key[i], got[i], want[i],
                 abs(g[i] - want[i])))
  }
  n <- length(mismatch) + length(over)
  if (n > 20) fail(sprintf("%s %s: %d rows disagree in all", file, column, n))
}

# compare_vec is compare_num for columns of ";"-joined numbers (a distribution in the options' order): want is a
# list of numeric vectors, NULL where the cell must be empty. The difference is the largest over the elements.
compare_vec <- function(file, column, key, got, want) {
  stopifnot(length(got) == length(want))
  worst <- 0
  n <- 0
  empty <- 0
  for (i in seq_along(got)) {
    w <- want[[i]]
    if (got[i] == "" || is.null(w)) {
      if (got[i] == "" && is.null(w)) {
        empty <- empty + 1
      } else {
        fail(sprintf("%s %s %s: silico %s, R %s", file, column, key[i], if (got[i] == "") "empty" else got[i],
                     if (is.null(w)) "empty" else paste(sprintf("%.17g", w), collapse = ";")))
      }
      next
    }
    g <- num(strsplit(got[i], ";", fixed = TRUE)[[1]])
    if (length(g) != length(w) || anyNA(g)) {
      fail(sprintf("%s %s %s: silico %s, R %d numbers", file, column, key[i], got[i], length(w)))
      next
    }
    d <- max(abs(g - w))
    n <- n + 1
    worst <- max(worst, d)
    if (d > tol) fail(sprintf("%s %s %s: silico %s, R %s (diff %.3g)", file, column, key[i], got[i],
                              paste(sprintf("%.17g", w), collapse = ";"), d))
  }
  cat(sprintf("%-22s %-20s max |diff| %.3g over %d rows (%d empty on both)\n", file, column, worst, n, empty))
  if (worst > state$worst$diff) state$worst <- list(diff = worst, what = paste(file, column))
}

# compare_text holds a column of text (counts, ids, labels) to want exactly.
compare_text <- function(file, column, key, got, want) {
  stopifnot(length(got) == length(want))
  bad <- which(got != want)
  cat(sprintf("%-22s %-20s %d of %d rows differ\n", file, column, length(bad), length(got)))
  for (i in head(bad, 10)) fail(sprintf("%s %s %s: silico \"%s\", R \"%s\"", file, column, key[i], got[i], want[i]))
}

# ---- the spec ----------------------------------------------------------------------------------------------------

spec <- yaml::read_yaml(spec_path)
q <- spec$questionnaire

# Options: the questionnaire's list of {id, text, weight, ignored_for_scale}; an option without a weight weighs its
# 1-based position, as the spec format says.
options <- local({
  o <- q$options
  data.frame(
    id = sapply(o, function(x) as.character(x$id)),
    weight = sapply(seq_along(o), function(k) if (is.null(o[[k]]$weight)) k else as.numeric(o[[k]]$weight)),
    ignored = sapply(o, function(x) isTRUE(x$ignored_for_scale)),
    stringsAsFactors = FALSE)
})

# Items: the file of id, text, scale, keyed ("-": reverse-keyed) or reversed (true/false), or an inline list.
items <- local({
  if (!is.null(q$items$file)) {
    it <- read.csv(file.path(spec_dir, q$items$file), colClasses = "character")
    rev <- if (!is.null(it$keyed)) it$keyed == "-" else tolower(it$reversed) == "true"
    data.frame(id = it$id, scale = it$scale, reversed = rev, stringsAsFactors = FALSE)
  } else {
    data.frame(id = sapply(q$items, function(x) as.character(x$id)),
               scale = sapply(q$items, function(x) if (is.null(x$scale)) "" else as.character(x$scale)),
               reversed = sapply(q$items, function(x) isTRUE(x$reversed)), stringsAsFactors = FALSE)
  }
})
if (any(items$scale == "")) stop("items without a scale: this script scores every item")

# score_of: an item's score of each option (NA for an option ignored for scale): its weight, or lo + hi - weight
# for a reverse-keyed item (lo, hi the extreme weights of the scored options).
scored <- !options$ignored
lo <- min(options$weight[scored])
hi <- max(options$weight[scored])
score_of <- function(item) {
  w <- if (items$reversed[items$id == item]) lo + hi - options$weight else options$weight
  ifelse(scored, w, NA)
}

# Personas and their groups: "all", then "<column>=<value>" for every value of every reference group column,
# values sorted; persona p is in "col=v" when its attribute col is v.
personas <- sapply(spec$personas, function(p) as.character(p$id))
persona_attr <- function(col) {
  sapply(spec$personas, function(p) if (is.null(p$attributes[[col]])) NA else trimws(as.character(p$attributes[[col]])))
}
group_cols <- unlist(spec$reference$groups)

# The humans' raw answers: a column per item (option ids, empty when missing) and the group columns.
human <- read.csv(file.path(spec_dir, spec$reference$file), colClasses = "character", na.strings = c("", "NA"))
human_groups <- list(all = rep(TRUE, nrow(human)))
persona_groups <- list(all = rep(TRUE, length(personas)))
for (col in group_cols) {
  v <- trimws(human[[col]])
  for (g in sort(unique(v[!is.na(v)]))) {
    label <- paste0(col, "=", g)
    human_groups[[label]] <- !is.na(v) & v == g
    persona_groups[[label]] <- persona_attr(col) %in% g
  }
}

# expected: Σ p · score over the scored options divided by their mass; NA without mass.
expected <- function(p, item) {
  if (is.null(p) || sum(p[scored]) <= 0) return(NA_real_)
  s <- score_of(item)
  sum(p[scored] * s[scored]) / sum(p[scored])
}
entropy_bits <- function(p) -sum(ifelse(p > 0, p * log2(p), 0))
jsd_bits <- function(p, q) {
  m <- (p + q) / 2
  kl <- function(a) sum(ifelse(a > 0, a * log2(a / m), 0))
  kl(p) / 2 + kl(q) / 2
}
# w1: Σ_{k<K} |F_P(k) - F_Q(k)| over the scored options in their order, each renormalised over them.
w1 <- function(p, q) {
  p <- p[scored] / sum(p[scored])
  q <- q[scored] / sum(q[scored])
  k <- length(p)
  sum(abs(cumsum(p)[-k] - cumsum(q)[-k]))
}

# ---- the model's distributions, from results.csv -----------------------------------------------------------------

# Each cell's distribution: its p_<option id> columns scaled to sum to 1 when all are present, non-negative and
# with mass; else a point mass at the option of an ok cell; else none. Cells of a wording or prompt variant and
# verbalized probes ask another question or restate one: the per-item pools hold the original cells only (both
# option orders, every seed).
res <- read_out("results.csv")
pcols <- paste0("p_", options$id)
original <- res$variant == "" & res$prompt_variant == "" & !grepl("/verbalized(/rev)?$", res$cell_id)
res <- res[original, ]
probs <- if (all(pcols %in% names(res))) sapply(pcols, function(c) num(res[[c]])) else
  matrix(NA_real_, nrow(res), length(pcols))
probs <- matrix(probs, nrow(res))
cell_p <- vector("list", nrow(res))
cell_from_probs <- logical(nrow(res))
for (i in seq_len(nrow(res))) {
  p <- probs[i, ]
  if (!anyNA(p) && all(p >= 0) && sum(p) > 0) {
    cell_p[[i]] <- p / sum(p)
    cell_from_probs[i] <- TRUE
  } else if (res$status[i] == "ok" && res$option_id[i] %in% options$id) {
    cell_p[[i]] <- as.numeric(options$id == res$option_id[i])
  }
}
has_p <- !sapply(cell_p, is.null)
models <- unique(res$model)

# The sums of the cells' distributions per model × item × persona, and their counts, computed once: pool reads them.
cell_key <- paste(res$model, res$item_id, res$persona_id, sep = "\t")
sums <- lapply(split(which(has_p), cell_key[has_p]), function(sel) {
  list(sum = Reduce(`+`, cell_p[sel]), cells = length(sel), probs = sum(cell_from_probs[sel]))
})

# pool: the mean distribution of the cells of model m on item it over the personas ps (every seed and option
# order of each), with the number of cells and of those from probabilities; p NULL when there is none.
pool <- function(m, it, ps) {
  parts <- sums[intersect(paste(m, it, ps, sep = "\t"), names(sums))]
  if (length(parts) == 0) return(list(p = NULL, cells = 0L, probs = 0L))
  cells <- sum(sapply(parts, `[[`, "cells"))
  list(p = Reduce(`+`, lapply(parts, `[[`, "sum")) / cells, cells = cells, probs = sum(sapply(parts, `[[`, "probs")))
}
source_of <- function(pl) {
  if (pl$cells == 0) "" else if (pl$probs == pl$cells) "probs" else if (pl$probs == 0) "answers" else "mixed"
}

# human_pmf: the table of a group's answers to item over its options, divided by their number; NULL when none.
human_pmf <- function(item, g) {
  tab <- table(factor(human[human_groups[[g]], item], levels = options$id))
  n <- sum(tab)
  list(p = if (n > 0) as.numeric(tab) / n else NULL, n = n)
}

# flat_total: the items' total does not vary, to rounding: |sum(C)| <= 1e-12 tr(C), C the pairwise covariances.
flat_total <- function(x) { C <- cov(x, use = "pairwise"); abs(sum(C)) <= 1e-12 * sum(diag(C)) }

# reliability: psych's alpha() and, over the items alpha keeps, omega(nfactors = 1, fm = "pa") of a matrix; NA
# where psych stops (with warnings silenced: silico computes what psych computes with warnings), and both NA
# where fewer people answered than alpha keeps items (a singular covariance matrix) or where the total score does
# not vary, |sum(C)| <= 1e-12 tr(C) (alpha is then infinite or a quotient of rounding errors): silico's rules,
# stricter than alpha(), which computes a number there.
reliability <- function(x) {
  x <- as.data.frame(x)
  a <- tryCatch(suppressWarnings(suppressMessages(alpha(x, warnings = FALSE))), error = function(e) NULL)
  if (is.null(a)) return(list(alpha = NA_real_, omega = NA_real_, items = NA_integer_))
  kept <- rownames(a$item.stats)
  if (sum(rowSums(!is.na(x[, kept, drop = FALSE])) > 0) < length(kept) || flat_total(x[, kept, drop = FALSE]))
    return(list(alpha = NA_real_, omega = NA_real_, items = length(kept)))
  om <- tryCatch(suppressWarnings(suppressMessages(omega(x[, kept], nfactors = 1, fm = "pa", plot = FALSE)))$omega.tot,
                 error = function(e) NA_real_)
  list(alpha = a$total$raw_alpha, omega = om, items = length(kept))
}

# ---- distributions.csv -------------------------------------------------------------------------------------------

check_distributions <- function() {
  d <- read_out("distributions.csv")
  key <- paste(d$model, d$item_id, d$persona_id, d$option_id, sep = "/")
  want_p <- numeric(nrow(d))
  want_cells <- character(nrow(d))
  want_source <- character(nrow(d))
  cache <- list()
  for (i in seq_len(nrow(d))) {
    k <- paste(d$model[i], d$item_id[i], d$persona_id[i])
    if (is.null(cache[[k]])) cache[[k]] <- pool(d$model[i], d$item_id[i], d$persona_id[i])
    pl <- cache[[k]]
    want_p[i] <- if (is.null(pl$p)) NA else pl$p[options$id == d$option_id[i]]
    want_cells[i] <- as.character(pl$cells)
    want_source[i] <- source_of(pl)
  }
  compare_num("distributions.csv", "p", key, d$p, want_p)
  compare_text("distributions.csv", "n_cells", key, d$n_cells, want_cells)
  compare_text("distributions.csv", "source", key, d$source, want_source)
}

# ---- reference.csv -----------------------------------------------------------------------------------------------

check_reference <- function() {
  r <- read_out("reference.csv")
  key <- paste(r$model, r$item_id, r$group, sep = "/")
  n <- nrow(r)
  want <- list(model_p = vector("list", n), human_p = vector("list", n))
  for (c in c("w1", "jsd", "model_entropy", "human_entropy", "model_mean", "human_mean")) want[[c]] <- rep(NA_real_, n)
  for (c in c("n_cells", "n_humans", "source", "options", "scale")) want[[c]] <- character(n)
  for (i in seq_len(n)) {
    it <- r$item_id[i]
    g <- r$group[i]
    if (is.null(persona_groups[[g]])) {
      fail(sprintf("reference.csv %s: group %s is not one of the reference's", key[i], g))
      next
    }
    pl <- pool(r$model[i], it, personas[persona_groups[[g]]])
    h <- human_pmf(it, g)
    want$n_cells[i] <- as.character(pl$cells)
    want$source[i] <- source_of(pl)
    want$n_humans[i] <- as.character(h$n)
    want$options[i] <- paste(options$id, collapse = ";")
    want$scale[i] <- items$scale[items$id == it]
    if (!is.null(pl$p)) {
      want$model_p[[i]] <- pl$p
      want$model_entropy[i] <- entropy_bits(pl$p)
      want$model_mean[i] <- expected(pl$p, it)
    }
    if (!is.null(h$p)) {
      want$human_p[[i]] <- h$p
      want$human_entropy[i] <- entropy_bits(h$p)
      want$human_mean[i] <- expected(h$p, it)
    }
    if (!is.null(pl$p) && !is.null(h$p)) {
      want$jsd[i] <- jsd_bits(pl$p, h$p)
      if (sum(pl$p[scored]) > 0 && sum(h$p[scored]) > 0) want$w1[i] <- w1(pl$p, h$p)
    }
  }
  # Every model × item × group once.
  expected_rows <- length(models) * nrow(items) * length(persona_groups)
  if (n != expected_rows || anyDuplicated(key)) {
    fail(sprintf("reference.csv: %d rows (%d distinct), want %d: models × items × groups", n, length(unique(key)),
                 expected_rows))
  }
  for (c in c("scale", "options", "source", "n_cells", "n_humans")) compare_text("reference.csv", c, key, r[[c]], want[[c]])
  for (c in c("model_p", "human_p")) compare_vec("reference.csv", c, key, r[[c]], want[[c]])
  for (c in c("w1", "jsd", "model_entropy", "human_entropy", "model_mean", "human_mean")) {
    compare_num("reference.csv", c, key, r[[c]], want[[c]])
  }
}

# ---- reference_scales.csv ----------------------------------------------------------------------------------------

check_reference_scales <- function() {
  r <- read_out("reference_scales.csv")
  # The lines of scale "all" average reference.csv's figures over every item and have no alpha or omega;
  # check_intervals.R recomputes their figures. Here: their head count, the group's respondents who answered at
  # least one item, then the scales' lines.
  all <- r[r$scale == "all", ]
  answered <- rowSums(!is.na(human[, items$id, drop = FALSE])) > 0
  compare_text("reference_scales.csv", "n_humans (all)", paste(all$model, all$group, sep = "/"), all$n_humans,
               sapply(all$group, function(g) as.character(sum(human_groups[[g]] & answered))))
  r <- r[r$scale != "all", ]
  key <- paste(r$model, r$scale, r$group, sep = "/")
  n <- nrow(r)
  want <- list()
  for (c in c("model_alpha", "model_omega_total", "human_alpha", "human_omega_total")) want[[c]] <- rep(NA_real_, n)
  for (c in c("n_personas", "n_items_used", "n_humans", "human_n_items_used", "note_set")) want[[c]] <- character(n)
  human_cache <- list()
  for (i in seq_len(n)) {
    sc <- r$scale[i]
    g <- r$group[i]
    its <- items$id[items$scale == sc]
    if (is.null(persona_groups[[g]]) || length(its) == 0) {
      fail(sprintf("reference_scales.csv %s: unknown scale or group", key[i]))
      next
    }
    # The model's personas × items matrix of expected scores, each of the persona's mean distribution over its
    # cells (seeds and option orders).
    ps <- personas[persona_groups[[g]]]
    x <- matrix(NA_real_, length(ps), length(its))
    for (a in seq_along(ps)) for (b in seq_along(its)) {
      pl <- pool(r$model[i], its[b], ps[a])
      if (!is.null(pl$p)) x[a, b] <- expected(pl$p, its[b])
    }
    m <- reliability(x)
    # Where alpha() stops, psych says nothing about the items it would keep: the count is not checked there.
    want$n_personas[i] <- as.character(sum(rowSums(!is.na(x)) > 0))
    want$n_items_used[i] <- if (is.na(m$items)) r$n_items_used[i] else as.character(m$items)
    want$model_alpha[i] <- m$alpha
    want$model_omega_total[i] <- m$omega
    want$note_set[i] <- if (is.na(m$alpha) || is.na(m$omega)) "note" else ""
    # The humans' respondents × items matrix of scores of the group.
    hk <- paste(sc, g)
    if (is.null(human_cache[[hk]])) {
      hx <- sapply(its, function(it) {
        k <- match(human[human_groups[[g]], it], options$id)
        score_of(it)[k]
      })
      hr <- reliability(hx)
      hr$n <- sum(human_groups[[g]])
      human_cache[[hk]] <- hr
    }
    h <- human_cache[[hk]]
    want$n_humans[i] <- as.character(h$n)
    want$human_n_items_used[i] <- if (is.na(h$items)) r$human_n_items_used[i] else as.character(h$items)
    want$human_alpha[i] <- h$alpha
    want$human_omega_total[i] <- h$omega
  }
  expected_rows <- length(models) * length(unique(items$scale)) * length(persona_groups)
  if (n != expected_rows || anyDuplicated(key)) {
    fail(sprintf("reference_scales.csv: %d rows (%d distinct), want %d: models × scales × groups", n,
                 length(unique(key)), expected_rows))
  }
  for (c in c("n_personas", "n_items_used", "n_humans", "human_n_items_used")) {
    compare_text("reference_scales.csv", c, key, r[[c]], want[[c]])
  }
  # A note exactly where R leaves the model's alpha or omega empty.
  compare_text("reference_scales.csv", "note (set)", key, ifelse(r$note == "", "", "note"), want$note_set)
  for (c in c("model_alpha", "model_omega_total", "human_alpha", "human_omega_total")) {
    compare_num("reference_scales.csv", c, key, r[[c]], want[[c]])
  }
  cat(sprintf("reference_scales.csv: psych %s stops on %d of %d model omegas, %d of %d human omegas\n",
              packageVersion("psych"), sum(is.na(want$model_omega_total)), n, sum(is.na(want$human_omega_total)), n))
}

# ---- order_bias.csv ----------------------------------------------------------------------------------------------

# The point values of order_bias.csv, from results.csv by their definitions (docs/architecture.md, "Order bias"):
# the cells are the main calls with a score (every wording and prompt variant; not the verbalized probe), the
# position of a cell's answer its shown_position, K the options in its shown column, the option shown first the
# first of them, the weight of an answer its option's weight as written (no reverse keying). The intervals are
# design/testdata/make_design.R's to check, from replayed resamples.
check_order_bias <- function() {
  o <- read_out("order_bias.csv")
  all <- read_out("results.csv")
  d <- all[all$score != "" & !grepl("/verbalized(/rev)?$", all$cell_id), ]
  shown <- strsplit(d$shown, "|", fixed = TRUE)
  d$k <- lengths(shown)
  d$first <- sapply(shown, `[`, 1)
  d$position <- as.integer(d$shown_position)
  d$weight <- options$weight[match(d$option_id, options$id)]
  probs_d <- if (all(pcols %in% names(d))) matrix(sapply(pcols, function(c) num(d[[c]])), nrow(d)) else
    matrix(NA_real_, nrow(d), length(pcols))
  d$expected_weight <- apply(probs_d, 1, function(p) {
    if (anyNA(p) || sum(p[scored]) <= 0) NA_real_ else sum(p[scored] * options$weight[scored]) / sum(p[scored])
  })
  orders <- c("as_written", "reversed", "shuffled")
  mean_or_na <- function(v) if (length(v) == 0) NA_real_ else mean(v)
  # first_effect: over the items and the options shown first in some cells and elsewhere in others, the option's
  # share of the answers when shown first less its share when shown elsewhere, weighted by the cells showing it
  # first.
  first_effect <- function(x) {
    effect <- c()
    shown_first <- c()
    for (it in unique(x$item_id)) {
      xi <- x[x$item_id == it, ]
      for (c in options$id) {
        f <- xi$first == c
        if (!any(f) || all(f)) next
        effect <- c(effect, mean(xi$option_id[f] == c) - mean(xi$option_id[!f] == c))
        shown_first <- c(shown_first, sum(f))
      }
    }
    if (length(effect) == 0) NA_real_ else weighted.mean(effect, shown_first)
  }
  key <- paste(o$model, o$item_id, sep = "/")
  n <- nrow(o)
  want <- list(position_shares = vector("list", n), marginal_p = vector("list", n))
  for (c in c("n", "n_personas", "k", paste0("n_", orders), paste0("n_expected_", orders), "marginal_cells",
              "marginal_source")) want[[c]] <- character(n)
  for (c in c(paste0("weight_", orders), paste0("expected_weight_", orders), "weight_diff", "expected_weight_diff",
              "primacy_recency", "first_effect")) want[[c]] <- rep(NA_real_, n)
  for (i in seq_len(n)) {
    m <- o$model[i]
    it <- o$item_id[i]
    x <- d[d$model == m & (it == "all" | d$item_id == it), ]
    k <- max(x$k)
    want$n[i] <- as.character(nrow(x))
    want$n_personas[i] <- as.character(length(unique(x$persona_id)))
    want$k[i] <- as.character(k)
    want$position_shares[[i]] <- sapply(seq_len(k), function(j) mean(x$position == j))
    for (ord in orders) {
      xo <- x[x$order == ord, ]
      e <- xo$expected_weight[!is.na(xo$expected_weight)]
      want[[paste0("n_", ord)]][i] <- as.character(nrow(xo))
      want[[paste0("n_expected_", ord)]][i] <- as.character(length(e))
      want[[paste0("weight_", ord)]][i] <- mean_or_na(xo$weight)
      want[[paste0("expected_weight_", ord)]][i] <- mean_or_na(e)
    }
    want$weight_diff[i] <- want$weight_reversed[i] - want$weight_as_written[i]
    want$expected_weight_diff[i] <- want$expected_weight_reversed[i] - want$expected_weight_as_written[i]
    want$primacy_recency[i] <- mean(x$position == 1) - mean(x$position == x$k)
    want$first_effect[i] <- first_effect(x)
    # The item's order-marginal distribution is reference.csv's model_p of group all: pool over every persona.
    if (it != "all") {
      pl <- pool(m, it, personas)
      want$marginal_p[[i]] <- pl$p
      want$marginal_cells[i] <- as.character(pl$cells)
      want$marginal_source[i] <- source_of(pl)
    } else {
      want$marginal_cells[i] <- "0"
    }
  }
  expected_rows <- length(models) * (nrow(items) + 1)
  if (n != expected_rows || anyDuplicated(key)) {
    fail(sprintf("order_bias.csv: %d rows (%d distinct), want %d: models × (items + all)", n, length(unique(key)),
                 expected_rows))
  }
  for (c in c("n", "n_personas", "k", paste0("n_", orders), paste0("n_expected_", orders), "marginal_cells",
              "marginal_source")) compare_text("order_bias.csv", c, key, o[[c]], want[[c]])
  for (c in c("position_shares", "marginal_p")) compare_vec("order_bias.csv", c, key, o[[c]], want[[c]])
  for (c in c(paste0("weight_", orders), paste0("expected_weight_", orders), "weight_diff", "expected_weight_diff",
              "primacy_recency", "first_effect")) compare_num("order_bias.csv", c, key, o[[c]], want[[c]])
}

# ---- run every check ---------------------------------------------------------------------------------------------

checks <- list(check_distributions, check_reference, check_reference_scales, check_order_bias)
for (f in checks) f()
cat(sprintf("worst difference: %.3g (%s); tolerance %g\n", state$worst$diff, state$worst$what, tol))
if (length(state$failures) > 0) {
  cat(sprintf("FAIL: %d disagreements\n", length(state$failures)))
  cat(paste0("  ", state$failures, "\n"), sep = "")
  quit(status = 1)
}
cat("ok: every figure agrees with R\n")
