# An independent check of package twins: recomputes, in base R, every figure of the person-by-person accuracy
# of digital twins that Go wrote, from the answers Go wrote, with the definitions the package documents: exact
# and within-one agreement, the mean absolute error and the correlation of scores; the baselines of the
# person's group (all grouping attributes alike; the modal option, tied modes credited equally, and the mean
# score, learnt from every person with a human answer, twin or not, the person included) and of the population; the retest normalisation of Park et al. (2024); and the percentile
# intervals (quantile type 7 at 2.5 and 97.5 %) over the bootstrap resamples of persons Go drew, replayed row
# by row (R recomputes each figure on the resampled rows themselves, where Go weighs persons by counts).
#
#   Rscript twins/testdata/check_twins.R DIR
#
# DIR holds (written by twins' TestAgainstR):
#   cases.csv      case, kind (item | scale).
#   options.csv    case, item, position, score: the options' scores by ordinal position (from 0).
#   answers.csv    case, item, person, human, twin, retest: ordinal positions, NA where missing; retest all NA
#                  without a retest.
#   persons.csv    case, person, a1, a2, a3: the grouping attributes ("" is a value of its own).
#   scales.csv     case, person, human, twin, retest: scale scores (scale cases), NA where missing.
#   resamples.csv  label, b, indices: the resamples of the scored persons (label = case) and of the retest's
#                  persons (label = case/retest), 0-based into those persons in increasing person order.
#   go.csv         case, figure, value: Go's figures, NA where it has none.
# Its figures are compared with Go's by rcheck/compare.R, sourced from this file's path: exits 0 and prints
# "every figure agrees" when every figure equals R's to 1e-9 (relative above 1) and neither
# side has one the other lacks; otherwise lists the differences and exits 1.
args <- commandArgs(trailingOnly = TRUE)
dir <- if (length(args) >= 1) args[1] else "."
rd <- function(name) read.csv(file.path(dir, name), colClasses = "character", na.strings = "NA")
num <- function(x) as.numeric(x)
here <- dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1]))
source(file.path(here, "..", "..", "rcheck", "compare.R"))
r_cor <- function(x, y) if (length(unique(x)) < 2 || length(unique(y)) < 2) NA else cor(x, y)
# A ratio of correlations, NA where the retest's is 0 or undefined.
cor_ratio <- function(tx, ty, rx, ry) { d <- r_cor(rx, ry); if (is.na(d) || d == 0) NA else r_cor(tx, ty) / d }

cases <- rd("cases.csv"); opts <- rd("options.csv"); answers <- rd("answers.csv")
persons <- rd("persons.csv"); scales <- rd("scales.csv"); resamples <- rd("resamples.csv")
parsed <- new.env()
draws <- function(label) {
  if (is.null(parsed[[label]])) {
    r <- resamples[resamples$label == label, ]
    r <- r[order(as.integer(r$b)), ]
    parsed[[label]] <- lapply(strsplit(r$indices, ";", fixed = TRUE), function(s) as.integer(s) + 1)
  }
  parsed[[label]]
}
# A figure's value on all rows and its interval over the resamples (rows replayed).
with_interval <- function(name, stat, rows, label) {
  v <- stat(rows)
  rs <- sapply(draws(label), function(idx) stat(idx))
  rs <- rs[!is.na(rs)]
  q <- if (length(rs) > 0) unname(quantile(rs, c(0.025, 0.975), type = 7)) else c(NA, NA)
  out <- list(v, q[1], q[2])
  names(out) <- paste0(name, c("", "_lo", "_hi"))
  out
}
# The four figures of a predictor whose per-person parts are agree (agreements), within, pairs, pred and act.
accuracy <- function(prefix, p, label) {
  all <- seq_along(p$pred)
  share <- function(x) function(i) if (sum(p$pairs[i]) == 0) NA else sum(x[i]) / sum(p$pairs[i])
  c(with_interval(paste0(prefix, "_exact"), share(p$agree), all, label),
    with_interval(paste0(prefix, "_within"), share(p$within), all, label),
    with_interval(paste0(prefix, "_mae"), function(i) mean(abs(p$pred[i] - p$act[i])), all, label),
    with_interval(paste0(prefix, "_corr"), function(i) r_cor(p$pred[i], p$act[i]), all, label))
}
# Modal-option credits: the tied modes of the basis's answers (k options), and for each scored answer the share
# of them equal to it and within one position of it.
mode_credit <- function(basis, scored, k) {
  tab <- tabulate(basis + 1, nbins = k)
  modes <- which(tab == max(tab)) - 1
  list(exact = sapply(scored, function(x) mean(modes == x)),
    within = sapply(scored, function(x) mean(abs(modes - x) <= 1)))
}
# Credits of every scored answer against the modes of its key's basis answers (keys kb of the basis, ks of the
# scored answers).
credits <- function(basis, kb, scored, ks, k) {
  out <- list(exact = numeric(length(scored)), within = numeric(length(scored)))
  for (key in unique(ks)) {
    m <- ks == key
    cr <- mode_credit(basis[kb == key], scored[m], k(key))
    out$exact[m] <- cr$exact; out$within[m] <- cr$within
  }
  out
}

for (case in cases$case) {
  kind <- cases$kind[cases$case == case]
  a <- answers[answers$case == case, ]
  for (col in c("person", "human", "twin", "retest")) a[[col]] <- num(a[[col]])
  o <- opts[opts$case == case, ]
  score <- function(item, pos) {
    oi <- o[o$item == item, ]
    num(oi$score)[match(pos, num(oi$position))]
  }
  kof <- function(item) sum(o$item == item)
  pp <- persons[persons$case == case, ]
  grp <- setNames(paste(pp$a1, pp$a2, pp$a3, sep = "\r"), pp$person)
  retest <- any(!is.na(a$retest))

  if (kind == "item") {
    it <- a$item[1]
    s <- a[!is.na(a$human) & !is.na(a$twin), ]
    s <- s[order(s$person), ]
    act <- score(it, s$human)
    twin <- list(agree = as.numeric(s$twin == s$human), within = as.numeric(abs(s$twin - s$human) <= 1),
      pairs = rep(1, nrow(s)), pred = score(it, s$twin), act = act)
    # The baselines learn from everyone with a human answer, twin or not.
    h <- a[!is.na(a$human), ]
    hg <- grp[as.character(h$person)]
    g <- grp[as.character(s$person)]
    k <- function(key) kof(it)
    gc <- credits(h$human, hg, s$human, g, k)
    hmean <- tapply(score(it, h$human), hg, mean)
    group <- list(agree = gc$exact, within = gc$within, pairs = rep(1, nrow(s)), pred = unname(hmean[g]), act = act)
    pc <- credits(h$human, rep(0, nrow(h)), s$human, rep(0, nrow(s)), k)
    popn <- list(agree = pc$exact, within = pc$within, pairs = rep(1, nrow(s)),
      pred = rep(mean(score(it, h$human)), nrow(s)), act = act)
    put(case, c(list(persons = nrow(s)), accuracy("twin", twin, case), accuracy("group", group, case),
      accuracy("population", popn, case)))
    if (retest) {
      r <- s[!is.na(s$retest), ]
      ract <- score(it, r$human)
      tw <- list(agree = as.numeric(r$twin == r$human), within = as.numeric(abs(r$twin - r$human) <= 1),
        pairs = rep(1, nrow(r)), pred = score(it, r$twin), act = ract)
      re <- list(agree = as.numeric(r$retest == r$human), within = as.numeric(abs(r$retest - r$human) <= 1),
        pairs = rep(1, nrow(r)), pred = score(it, r$retest), act = ract)
      label <- paste0(case, "/retest")
      ratio <- function(x, y) function(i) { d <- mean(y[i]); if (d == 0) NA else mean(x[i]) / d }
      corr_ratio <- function(i) cor_ratio(tw$pred[i], tw$act[i], re$pred[i], re$act[i])
      all <- seq_len(nrow(r))
      put(case, c(list(retest_persons = nrow(r), retest_normalizable = nrow(r)),
        accuracy("rt_twin", tw, label), accuracy("rt_retest", re, label),
        with_interval("norm_exact", ratio(tw$agree, re$agree), all, label),
        with_interval("norm_within", ratio(tw$within, re$within), all, label),
        with_interval("norm_corr", corr_ratio, all, label)))
    }
    next
  }

  # A scale: persons with both scale scores; agreements pooled over their items.
  sc <- scales[scales$case == case, ]
  for (col in c("person", "human", "twin", "retest")) sc[[col]] <- num(sc[[col]])
  sc <- sc[!is.na(sc$human) & !is.na(sc$twin), ]
  sc <- sc[order(sc$person), ]
  pairs_of <- function(who, need) {
    x <- a[a$person %in% who & !is.na(a$human) & !is.na(a$twin), ]
    if (need) x <- x[!is.na(x$retest), ]
    x
  }
  per_person <- function(x, who, v) sapply(who, function(p) sum(v[x$person == p]))
  x <- pairs_of(sc$person, FALSE)
  twin <- list(agree = per_person(x, sc$person, x$twin == x$human),
    within = per_person(x, sc$person, abs(x$twin - x$human) <= 1),
    pairs = per_person(x, sc$person, rep(1, nrow(x))), pred = sc$twin, act = sc$human)
  # The baselines learn from every human answer and every human scale score, twin or not: modal options per
  # (group, item) and per item, credited on the scored pairs x; mean scale scores per group and overall.
  hx <- a[!is.na(a$human), ]
  kb <- paste(grp[as.character(hx$person)], hx$item, sep = "\n")
  ks <- paste(grp[as.character(x$person)], x$item, sep = "\n")
  item_of <- function(key) kof(sub(".*\n", "", key))
  gcr <- credits(hx$human, kb, x$human, ks, item_of)
  pcr <- credits(hx$human, hx$item, x$human, x$item, kof)
  hs <- scales[scales$case == case, ]
  hs <- hs[!is.na(num(hs$human)), ]
  hmean <- tapply(num(hs$human), grp[as.character(hs$person)], mean)
  g <- grp[as.character(sc$person)]
  group <- list(agree = per_person(x, sc$person, gcr$exact), within = per_person(x, sc$person, gcr$within),
    pairs = twin$pairs, pred = unname(hmean[g]), act = sc$human)
  popn <- list(agree = per_person(x, sc$person, pcr$exact), within = per_person(x, sc$person, pcr$within),
    pairs = twin$pairs, pred = rep(mean(num(hs$human)), nrow(sc)), act = sc$human)
  put(case, c(list(persons = nrow(sc)), accuracy("twin", twin, case), accuracy("group", group, case),
    accuracy("population", popn, case)))
  if (retest) {
    r <- sc[!is.na(sc$retest), ]
    x3 <- pairs_of(r$person, TRUE)
    np <- per_person(x3, r$person, rep(1, nrow(x3)))
    tw <- list(agree = per_person(x3, r$person, x3$twin == x3$human),
      within = per_person(x3, r$person, abs(x3$twin - x3$human) <= 1), pairs = np, pred = r$twin, act = r$human)
    re <- list(agree = per_person(x3, r$person, x3$retest == x3$human),
      within = per_person(x3, r$person, abs(x3$retest - x3$human) <= 1), pairs = np, pred = r$retest,
      act = r$human)
    label <- paste0(case, "/retest")
    # Park et al.'s normalised accuracy: per person, the twin's share over the retest's share, averaged over
    # the persons whose retest agrees at least once.
    park <- function(tv, rv) function(i) {
      ok <- np[i] > 0 & rv[i] > 0
      if (!any(ok)) NA else mean((tv[i][ok] / np[i][ok]) / (rv[i][ok] / np[i][ok]))
    }
    corr_ratio <- function(i) cor_ratio(r$twin[i], r$human[i], r$retest[i], r$human[i])
    all <- seq_len(nrow(r))
    put(case, c(list(retest_persons = nrow(r), retest_normalizable = sum(np > 0 & re$agree > 0)),
      accuracy("rt_twin", tw, label), accuracy("rt_retest", re, label),
      with_interval("norm_exact", park(tw$agree, re$agree), all, label),
      with_interval("norm_within", park(tw$within, re$within), all, label),
      with_interval("norm_corr", corr_ratio, all, label)))
  }
}

compare_figures(dir)
