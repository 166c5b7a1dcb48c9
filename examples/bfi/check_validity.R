# Recomputes, independently of silico, every point value of an examples/bfi run's validity.csv — r2, difference
# (and agree), sd_ratio, acquiescence, contradiction, congruence, and the n_personas and n_humans they are over —
# from the run's distributions.csv and results.csv, the raw human answers (the spec's reference file) and the spec's
# scoring, with base R and psych, and compares each with what the run wrote.
#
# Run from the repository root after a run of examples/bfi:
#   go run ./cmd/starter run examples/bfi/experiment.yaml --output /tmp/bfi
#   Rscript examples/bfi/check_validity.R /tmp/bfi [examples/bfi/experiment.yaml]
# Needs R with psych, GPArotation and yaml (Debian: r-base-core r-cran-psych r-cran-gparotation r-cran-yaml).
#
# Every number must agree to `tol`, and a cell silico leaves empty must be one R leaves empty (and the reverse).
# Each comparison prints one line: statistic, column, the largest absolute difference, the rows compared. The
# script exits non-zero when any comparison fails, after printing every failure. The intervals are not checked
# here: they come from resamples a run can write (results.WriteValidityResamples) for a replay.
suppressPackageStartupMessages({
  library(psych)
  library(GPArotation)
  library(yaml)
})

tol <- 1e-9

args <- commandArgs(trailingOnly = TRUE)
if (length(args) < 1 || length(args) > 2) {
  stop("usage: Rscript examples/bfi/check_validity.R <run directory> [experiment.yaml]")
}
run_dir <- args[1]
spec_path <- if (length(args) == 2) args[2] else "examples/bfi/experiment.yaml"
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
wsd <- function(y, w) {
  ok <- !is.na(y)
  if (sum(ok) < 2) return(NA)
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
ok_levels <- function(f) all(table(f) >= 2)

h_raw <- human_raw
h_key <- keyed_matrix(h_raw)
for (m in model_ids) {
  m_raw <- model_raw(m)
  m_key <- keyed_matrix(m_raw)
  for (k in scale_ids) {
    ms <- scale_score(m_key, k)
    hs <- scale_score(h_key, k)
    for (g in groups) {
      pa <- persona_attr(g)
      if (all(is.na(pa))) next
      ha <- human[[g]]
      L <- sort(intersect(unique(pa[!is.na(pa)]), unique(ha[!is.na(ha)])), method = "radix")
      mk <- !is.na(ms) & pa %in% L
      hk <- !is.na(hs) & ha %in% L
      mf <- factor(pa[mk], levels = L)
      hf <- factor(ha[hk], levels = L)
      mr2 <- if (ok_levels(mf)) fit_r2(ms[mk], mf, rep(1, sum(mk))) else NA
      hr2 <- if (ok_levels(hf)) fit_r2(hs[hk], hf, human_w[hk]) else NA
      add(model = m, scale = k, attribute = g, level = "", item_id = "", statistic = "r2", n_personas = sum(mk),
          n_humans = sum(hk), model_value = mr2, human_value = hr2, value = NA, agree = "")
      mc <- coef(lm(ms[mk] ~ mf))
      hc <- coef(lm(hs[hk] ~ hf, weights = human_w[hk]))
      for (l in seq_along(L)[-1]) {
        two <- function(f) sum(f == L[1]) >= 2 && sum(f == L[l]) >= 2
        md <- if (two(mf)) unname(mc[l]) else NA
        hd <- if (two(hf)) unname(hc[l]) else NA
        agree <- if (is.na(md) || is.na(hd)) "" else tolower(as.character(sign(md) == sign(hd)))
        add(model = m, scale = k, attribute = g, level = L[l], item_id = "", statistic = "difference",
            n_personas = sum(mf %in% L[c(1, l)]), n_humans = sum(hf %in% L[c(1, l)]), model_value = md,
            human_value = hd, value = NA, agree = agree)
      }
    }
    msd <- sd(ms, na.rm = TRUE)
    hsd <- wsd(hs, human_w)
    add(model = m, scale = k, attribute = "all", level = "", item_id = "", statistic = "sd_ratio",
        n_personas = sum(!is.na(ms)), n_humans = sum(!is.na(hs)), model_value = msd, human_value = hsd,
        value = msd / hsd, agree = "")
    for (it in scale_items[[k]]) {
      msd <- sd(m_key[, it], na.rm = TRUE)
      hsd <- wsd(h_key[, it], human_w)
      add(model = m, scale = k, attribute = "all", level = "", item_id = it, statistic = "sd_ratio",
          n_personas = sum(!is.na(m_key[, it])), n_humans = sum(!is.na(h_key[, it])), model_value = msd,
          human_value = hsd, value = msd / hsd, agree = "")
    }
    its <- scale_items[[k]]
    both <- any(reversed[its]) && any(!reversed[its])
    if (both) {
      ma <- acquiescence_of(m_raw, k)
      ha <- acquiescence_of(h_raw, k)
      add(model = m, scale = k, attribute = "all", level = "", item_id = "", statistic = "acquiescence",
          n_personas = sum(!is.na(ma)), n_humans = sum(!is.na(ha)), model_value = mean(ma, na.rm = TRUE),
          human_value = weighted.mean(ha[!is.na(ha)], human_w[!is.na(ha)]), value = NA, agree = "")
      mp <- model_pairs(m, k)
      hp <- pair_counts(h_raw, k)
      add(model = m, scale = k, attribute = "all", level = "", item_id = "", statistic = "contradiction",
          n_personas = sum(mp$pairs > 0), n_humans = sum(hp$pairs > 0), model_value = sum(mp$agree) / sum(mp$pairs),
          human_value = sum(human_w * hp$agree) / sum(human_w * hp$pairs), value = NA, agree = "")
    } else {
      for (st in c("acquiescence", "contradiction")) {
        add(model = m, scale = k, attribute = "all", level = "", item_id = "", statistic = st, n_personas = 0,
            n_humans = 0, model_value = NA, human_value = NA, value = NA, agree = "")
      }
    }
    lm_ <- loadings_of(m_key[, its], rep(1, nrow(m_key)))
    lh <- loadings_of(h_key[, its], human_w)
    cg <- factor.congruence(matrix(lm_), matrix(lh), digits = 17)[1, 1]
    add(model = m, scale = k, attribute = "all", level = "", item_id = "", statistic = "congruence",
        n_personas = nrow(m_key), n_humans = nrow(h_key), model_value = NA, human_value = NA, value = cg, agree = "")
  }
}
want <- do.call(rbind, rows)

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

if (length(failures) > 0) {
  cat(sprintf("FAIL: %s\n", failures), sep = "")
  quit(status = 1)
}
cat("validity.csv: every figure agrees with R to", tol, "\n")
