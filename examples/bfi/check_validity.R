# Recomputes, independently of silico, every point value of an examples/bfi run's validity.csv — r2, difference
# (and agree), sd_ratio, acquiescence, contradiction, congruence, and the n_personas and n_humans they are over —
# from the run's distributions.csv and results.csv, the raw human answers (the spec's reference file) and the spec's
# scoring, with base R and psych, and compares each with what the run wrote.
#
# Run from the repository root after a run of examples/bfi:
#   go run ./cmd/starter run examples/bfi/experiment.yaml --output /tmp/bfi
#   Rscript examples/bfi/check_validity.R /tmp/bfi [examples/bfi/experiment.yaml [resamples.csv]]
# Needs R with psych, GPArotation and yaml (Debian: r-base-core r-cran-psych r-cran-gparotation r-cran-yaml).
#
# Every number must agree to `tol`, and a cell silico leaves empty must be one R leaves empty (and the reverse).
# Each comparison prints one line: statistic, column, the largest absolute difference, the rows compared. The
# script exits non-zero when any comparison fails, after printing every failure. The intervals are not checked
# without a third argument; with one (the resamples results.WriteValidityResamples writes), every line is
# recomputed on each resample and its model, human and value intervals compared too (see "intervals" below).
suppressPackageStartupMessages({
  library(psych)
  library(GPArotation)
  library(yaml)
})

tol <- 1e-9

args <- commandArgs(trailingOnly = TRUE)
if (length(args) < 1 || length(args) > 3) {
  stop("usage: Rscript examples/bfi/check_validity.R <run directory> [experiment.yaml [resamples.csv]]")
}
run_dir <- args[1]
spec_path <- if (length(args) >= 2) args[2] else "examples/bfi/experiment.yaml"
resamples_path <- if (length(args) == 3) args[3] else NULL
spec_dir <- dirname(spec_path)
# YAML 1.1 reads a bare N or Y (scale ids) as a boolean: keep such words as the text they are.
keep_text <- function(x) x
spec <- yaml::read_yaml(spec_path, handlers = list(`bool#yes` = keep_text, `bool#no` = keep_text))

failures <- character(0)
fail <- function(msg) failures <<- c(failures, msg)
read_csv_text <- function(path) {
  read.csv(path, colClasses = "character", na.strings = character(0), check.names = FALSE)
}
num <- function(x) suppressWarnings(as.numeric(ifelse(x == "", NA, x)))

# ---- the spec's scoring ------------------------------------------------------------------------------------------

opts <- spec$questionnaire$options
opt_id <- vapply(opts, function(o) as.character(o$id), "")
opt_w <- vapply(opts, function(o) as.numeric(o$weight), 0)
opt_scored <- !vapply(opts, function(o) isTRUE(o$ignored_for_scale), FALSE)
lo <- min(opt_w[opt_scored])
hi <- max(opt_w[opt_scored])
mid <- (lo + hi) / 2
items <- read.csv(file.path(spec_dir, spec$questionnaire$items$file), colClasses = "character")
item_ids <- items$id
reversed <- setNames(items$keyed == "-", items$id)
scale_ids <- vapply(spec$questionnaire$scales, function(s) s$id, "")
scale_items <- lapply(setNames(scale_ids, scale_ids), function(k) items$id[items$scale == k])
keyed <- function(raw, item) if (reversed[[item]]) lo + hi - raw else raw

personas <- spec$personas
persona_ids <- vapply(personas, function(p) p$id, "")
groups <- unlist(spec$reference$groups)
weight_col <- spec$reference$weight

# ---- the two sides -----------------------------------------------------------------------------------------------

# Model: each persona's expected raw score per item over its mean distribution (distributions.csv).
dist <- read_csv_text(file.path(run_dir, "distributions.csv"))
dist$p <- num(dist$p)
dist$w <- opt_w[match(dist$option_id, opt_id)]
dist$scored <- opt_scored[match(dist$option_id, opt_id)]
model_ids <- unique(dist$model)
model_raw <- function(m) {
  d <- dist[dist$model == m & dist$scored & !is.na(dist$p), ]
  num_ <- tapply(d$p * d$w, list(d$persona_id, d$item_id), sum)
  den <- tapply(d$p, list(d$persona_id, d$item_id), sum)
  x <- num_ / den
  x[den <= 0] <- NA
  x[persona_ids, item_ids, drop = FALSE]
}

# Humans: each respondent's raw answer (the option's weight) per item.
human <- read.csv(file.path(spec_dir, spec$reference$file), colClasses = "character", na.strings = "")
human_raw <- sapply(item_ids, function(it) {
  v <- human[[it]]
  w <- opt_w[match(v, opt_id)]
  w[!opt_scored[match(v, opt_id)]] <- NA
  w
})
human_w <- if (is.null(weight_col)) rep(1, nrow(human)) else as.numeric(human[[weight_col]])

keyed_matrix <- function(raw) sapply(colnames(raw), function(it) keyed(raw[, it], it))
scale_score <- function(x, k) {
  s <- rowMeans(x[, scale_items[[k]], drop = FALSE], na.rm = TRUE)
  s[is.nan(s)] <- NA
  s
}
acquiescence_of <- function(raw, k) {
  its <- scale_items[[k]]
  pos <- its[!reversed[its]]
  neg <- its[reversed[its]]
  p <- rowMeans(raw[, pos, drop = FALSE] - mid, na.rm = TRUE)
  n <- rowMeans(raw[, neg, drop = FALSE] - mid, na.rm = TRUE)
  a <- (p + n) / 2
  a[is.nan(a)] <- NA
  a
}
# Pairs of one unit's answers: A of its P answered positive items agree (raw above the midpoint), B of its N
# answered negative items; A*B of its P*N (positive, negative) pairs agree twice.
pair_counts <- function(raw, k) {
  its <- scale_items[[k]]
  pos <- its[!reversed[its]]
  neg <- its[reversed[its]]
  P <- rowSums(!is.na(raw[, pos, drop = FALSE]))
  N <- rowSums(!is.na(raw[, neg, drop = FALSE]))
  A <- rowSums(raw[, pos, drop = FALSE] > mid, na.rm = TRUE)
  B <- rowSums(raw[, neg, drop = FALSE] > mid, na.rm = TRUE)
  list(agree = A * B, pairs = P * N)
}
# one-factor principal-axis loadings on the pairwise (weighted) correlations, oriented to a non-negative sum
loadings_of <- function(x, w) {
  r <- if (all(w == 1)) cor(x, use = "pairwise") else wcor(x, w)
  l <- as.vector(suppressWarnings(suppressMessages(fa(r, nfactors = 1, fm = "pa")))$loadings)
  if (sum(l) < 0) -l else l
}
wcor <- function(x, w) {
  k <- ncol(x)
  r <- diag(k)
  for (i in seq_len(k)) for (j in seq_len(k)) {
    ok <- !is.na(x[, i]) & !is.na(x[, j])
    r[i, j] <- cov.wt(x[ok, c(i, j)], wt = w[ok] / sum(w[ok]), cor = TRUE)$cor[1, 2]
  }
  r
}
# The rules that need two units count distinct units (u: each row's unit, repeated where a resample drew it
# again): one persona drawn twice is still one persona.
distinct <- function(u) length(unique(u))
wsd <- function(y, w, u) {
  ok <- !is.na(y)
  if (distinct(u[ok]) < 2) return(NA)
  sqrt(cov.wt(cbind(y[ok]), wt = w[ok] / sum(w[ok]), method = "unbiased")$cov[1, 1])
}

# Model contradictions: the written answers of the cells shown as written in the items' own wording (results.csv),
# pairs within each persona and seed.
res <- read_csv_text(file.path(run_dir, "results.csv"))
res <- res[res$order == "as_written" & res$variant == "" & res$prompt_variant == "" & res$score != "", ]
model_pairs <- function(m, k) {
  d <- res[res$model == m, ]
  agree <- 0
  pairs <- 0
  for (sd in unique(d$seed)) {
    ds <- d[d$seed == sd, ]
    raw <- matrix(NA, length(persona_ids), length(item_ids), dimnames = list(persona_ids, item_ids))
    sc <- num(ds$score)
    raw[cbind(ds$persona_id, ds$item_id)] <- ifelse(ds$reversed == "true", lo + hi - sc, sc)
    pc <- pair_counts(raw, k)
    agree <- agree + pc$agree
    pairs <- pairs + pc$pairs
  }
  list(agree = agree, pairs = pairs)
}

# ---- expected validity.csv ---------------------------------------------------------------------------------------

rows <- list()
add <- function(...) rows[[length(rows) + 1]] <<- data.frame(..., stringsAsFactors = FALSE)
persona_attr <- function(g) vapply(personas, function(p) {
  v <- p$attributes[[g]]
  if (is.null(v)) NA_character_ else trimws(as.character(v))
}, "")
fit_r2 <- function(y, f, w) summary(lm(y ~ f, weights = w))$r.squared
ok_levels <- function(f, u) all(vapply(levels(f), function(l) distinct(u[f == l]), 0L) >= 2)

h_raw <- human_raw
h_key <- keyed_matrix(h_raw)
# What each model's lines read of its personas, computed once: raw and keyed scores, contradiction counts.
model_parts <- lapply(setNames(model_ids, model_ids), function(m) {
  m_raw <- model_raw(m)
  list(raw = m_raw, key = keyed_matrix(m_raw), pairs = lapply(setNames(scale_ids, scale_ids), function(k) model_pairs(m, k)))
})
ratio_of <- function(m, h) if (is.na(m) || is.na(h) || h == 0) NA else m / h
congruence_of <- function(mx, mw, hx, hw) tryCatch({
  cg <- factor.congruence(matrix(loadings_of(mx, mw)), matrix(loadings_of(hx, hw)), digits = 17)[1, 1]
  if (is.finite(cg)) cg else NA
}, error = function(e) NA)

# expected_rows computes every line of validity.csv on the personas mi and the respondents hi (row numbers,
# repetition allowed): the point values on 1..n, a bootstrap resample's values on its rows.
expected_rows <- function(mi, hi) {
  rows <<- list()
  hw <- human_w[hi]
  hr <- h_raw[hi, , drop = FALSE]
  hkey <- h_key[hi, , drop = FALSE]
  for (m in model_ids) {
    m_raw <- model_parts[[m]]$raw[mi, , drop = FALSE]
    m_key <- model_parts[[m]]$key[mi, , drop = FALSE]
    for (k in scale_ids) {
      ms <- scale_score(m_key, k)
      hs <- scale_score(hkey, k)
      for (g in groups) {
        pa <- persona_attr(g)
        if (all(is.na(pa))) next
        L <- sort(intersect(unique(pa[!is.na(pa)]), unique(human[[g]][!is.na(human[[g]])])), method = "radix")
        pa <- pa[mi]
        ha <- human[[g]][hi]
        mk <- !is.na(ms) & pa %in% L
        hk <- !is.na(hs) & ha %in% L
        mf <- factor(pa[mk], levels = L)
        hf <- factor(ha[hk], levels = L)
        mr2 <- if (ok_levels(mf, mi[mk])) fit_r2(ms[mk], mf, rep(1, sum(mk))) else NA
        hr2 <- if (ok_levels(hf, hi[hk])) fit_r2(hs[hk], hf, hw[hk]) else NA
        add(model = m, scale = k, attribute = g, level = "", item_id = "", statistic = "r2", n_personas = sum(mk),
            n_humans = sum(hk), model_value = mr2, human_value = hr2, value = NA, agree = "")
        mc <- if (sum(mk) > 0) coef(lm(ms[mk] ~ mf)) else NULL
        hc <- if (sum(hk) > 0) coef(lm(hs[hk] ~ hf, weights = hw[hk])) else NULL
        for (l in seq_along(L)[-1]) {
          two <- function(f, u) distinct(u[f == L[1]]) >= 2 && distinct(u[f == L[l]]) >= 2
          # by name: lm drops a level no unit has (a resample's), which shifts the later coefficients
          md <- if (two(mf, mi[mk])) unname(mc[paste0("mf", L[l])]) else NA
          hd <- if (two(hf, hi[hk])) unname(hc[paste0("hf", L[l])]) else NA
          agree <- if (is.na(md) || is.na(hd)) "" else tolower(as.character(sign(md) == sign(hd)))
          add(model = m, scale = k, attribute = g, level = L[l], item_id = "", statistic = "difference",
              n_personas = sum(mf %in% L[c(1, l)]), n_humans = sum(hf %in% L[c(1, l)]), model_value = md,
              human_value = hd, value = NA, agree = agree)
        }
      }
      msd <- wsd(ms, rep(1, length(ms)), mi)
      hsd <- wsd(hs, hw, hi)
      add(model = m, scale = k, attribute = "all", level = "", item_id = "", statistic = "sd_ratio",
          n_personas = sum(!is.na(ms)), n_humans = sum(!is.na(hs)), model_value = msd, human_value = hsd,
          value = ratio_of(msd, hsd), agree = "")
      for (it in scale_items[[k]]) {
        msd <- wsd(m_key[, it], rep(1, nrow(m_key)), mi)
        hsd <- wsd(hkey[, it], hw, hi)
        add(model = m, scale = k, attribute = "all", level = "", item_id = it, statistic = "sd_ratio",
            n_personas = sum(!is.na(m_key[, it])), n_humans = sum(!is.na(hkey[, it])), model_value = msd,
            human_value = hsd, value = ratio_of(msd, hsd), agree = "")
      }
      its <- scale_items[[k]]
      both <- any(reversed[its]) && any(!reversed[its])
      if (both) {
        ma <- acquiescence_of(m_raw, k)
        ha <- acquiescence_of(hr, k)
        add(model = m, scale = k, attribute = "all", level = "", item_id = "", statistic = "acquiescence",
            n_personas = sum(!is.na(ma)), n_humans = sum(!is.na(ha)),
            model_value = if (any(!is.na(ma))) mean(ma, na.rm = TRUE) else NA,
            human_value = if (any(!is.na(ha))) weighted.mean(ha[!is.na(ha)], hw[!is.na(ha)]) else NA, value = NA, agree = "")
        mp <- model_parts[[m]]$pairs[[k]]
        ma <- mp$agree[mi]
        mpr <- mp$pairs[mi]
        hp <- pair_counts(hr, k)
        add(model = m, scale = k, attribute = "all", level = "", item_id = "", statistic = "contradiction",
            n_personas = sum(mpr > 0), n_humans = sum(hp$pairs > 0),
            model_value = if (sum(mpr) > 0) sum(ma) / sum(mpr) else NA,
            human_value = if (sum(hw * hp$pairs) > 0) sum(hw * hp$agree) / sum(hw * hp$pairs) else NA, value = NA, agree = "")
      } else {
        for (st in c("acquiescence", "contradiction")) {
          add(model = m, scale = k, attribute = "all", level = "", item_id = "", statistic = st, n_personas = 0,
              n_humans = 0, model_value = NA, human_value = NA, value = NA, agree = "")
        }
      }
      cg <- congruence_of(m_key[, its], rep(1, nrow(m_key)), hkey[, its], hw)
      add(model = m, scale = k, attribute = "all", level = "", item_id = "", statistic = "congruence",
          n_personas = nrow(m_key), n_humans = nrow(hkey), model_value = NA, human_value = NA, value = cg, agree = "")
    }
  }
  do.call(rbind, rows)
}
want <- expected_rows(seq_along(persona_ids), seq_len(nrow(human)))

# ---- compare -----------------------------------------------------------------------------------------------------

got <- read_csv_text(file.path(run_dir, "validity.csv"))
key <- function(d) paste(d$model, d$scale, d$attribute, d$level, d$item_id, d$statistic, sep = "|")
if (nrow(got) != nrow(want)) fail(sprintf("validity.csv has %d lines, R expects %d", nrow(got), nrow(want)))
kg <- key(got)
kw <- key(want)
for (x in setdiff(kw, kg)) fail(sprintf("validity.csv: no line %s", x))
for (x in setdiff(kg, kw)) fail(sprintf("validity.csv: unexpected line %s", x))
got <- got[match(kw, kg), ]

for (st in unique(want$statistic)) {
  sel <- want$statistic == st & !is.na(got$statistic)
  for (col in c("model_value", "human_value", "value")) {
    g <- num(got[[col]][sel])
    w <- want[[col]][sel]
    empty_mismatch <- which(is.na(g) != is.na(w))
    for (i in empty_mismatch) {
      fail(sprintf("%s %s: %s silico %s, R %s", st, col, kw[sel][i], got[[col]][sel][i], format(w[i], digits = 17)))
    }
    both <- !is.na(g) & !is.na(w)
    d <- if (any(both)) max(abs(g[both] - w[both])) else 0
    if (d > tol) {
      bad <- which(both & abs(g - w) > tol)
      for (i in bad) fail(sprintf("%s %s: %s silico %s, R %.17g", st, col, kw[sel][i], got[[col]][sel][i], w[i]))
    }
    cat(sprintf("validity.csv %-13s %-11s max |diff| %.3g over %d rows (%d empty on both sides)\n", st, col, d,
                sum(both), sum(is.na(g) & is.na(w))))
  }
  for (col in c("n_personas", "n_humans", "agree")) {
    g <- got[[col]][sel]
    w <- as.character(want[[col]][sel])
    for (i in which(g != w)) fail(sprintf("%s %s: %s silico %s, R %s", st, col, kw[sel][i], g[i], w[i]))
  }
}

# ---- intervals ---------------------------------------------------------------------------------------------------

# With the resamples silico took (results.WriteValidityResamples), every line is recomputed on each resample b of
# the personas and of the respondents (their weights travel with them), and each interval is R's quantile(type =
# 7) at 0.025 and 0.975 of the resampled values that are defined (NA: a resample on which the statistic is
# undefined, which silico leaves out as well; a level needs two distinct units, not two draws). A line has an
# interval only where its point value is defined and on at least half of the resamples, and the humans' and the
# compared value's only when there are respondents.
if (!is.null(resamples_path)) {
  rs <- read_csv_text(resamples_path)
  draws <- function(label) {
    r <- rs[rs$label == label, ]
    lapply(r$indices[order(as.integer(r$b))], function(s) if (s == "") integer(0) else as.integer(strsplit(s, ";")[[1]]) + 1L)
  }
  pres <- draws("personas")
  hres <- draws("respondents")
  B <- length(pres)
  if (B == 0) fail("resamples: no resample of the personas")
  if (length(hres) != B) fail(sprintf("resamples: %d of the personas, %d of the respondents", B, length(hres)))
  if (B > 0 && length(hres) == B) {
    cols <- c("model_value", "human_value", "value")
    vals <- lapply(setNames(cols, cols), function(c) matrix(NA_real_, B, nrow(want)))
    for (b in seq_len(B)) {
      wb <- expected_rows(pres[[b]], hres[[b]])
      stopifnot(identical(key(wb), kw))
      for (c in cols) vals[[c]][b, ] <- wb[[c]]
    }
    # No interval when the statistic is defined on fewer than half of the resamples (silico's MinDefinedShare).
    q7 <- function(v) {
      v <- v[!is.na(v)]
      if (length(v) == 0 || length(v) < 0.5 * B) c(NA, NA) else unname(quantile(v, c(0.025, 0.975), type = 7))
    }
    checked <- 0
    worst <- 0
    for (c in cols) {
      side <- sub("_value$", "", c)
      for (i in seq_len(nrow(want))) {
        iv <- if (is.na(want[[c]][i])) c(NA, NA) else q7(vals[[c]][, i])
        for (j in 1:2) {
          col <- paste0(side, c("_lo", "_hi")[j])
          g <- num(got[[col]][i])
          w <- iv[j]
          if (is.na(g) && is.na(w)) next
          checked <- checked + 1
          d <- if (is.na(g) || is.na(w)) Inf else abs(g - w)
          worst <- max(worst, d)
          if (d > tol) fail(sprintf("%s %s: %s silico %s, R %.17g", want$statistic[i], col, kw[i], got[[col]][i], w))
        }
      }
    }
    cat(sprintf("validity.csv intervals: checked %d interval figures over %d resamples, largest difference %.3g\n",
                checked, B, worst))
  }
}

if (length(failures) > 0) {
  cat(sprintf("FAIL: %s\n", failures), sep = "")
  quit(status = 1)
}
cat("validity.csv: every figure agrees with R to", tol, "\n")
