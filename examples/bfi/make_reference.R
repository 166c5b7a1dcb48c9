# The human reference of examples/bfi: psych's bfi data set (2,800 people answering the 25 IPIP Big-Five items
# of the SAPA project on a 6-point scale; Revelle, Wilt and Rosenthal 2010), its item texts from psychTools'
# bfi.dictionary and its keying from psych's scoring keys bfi.keys. IPIP items are public domain.
#
# Run from the repository root (Debian: apt-get install r-cran-psych r-cran-gparotation, which brings
# r-cran-psychtools):
#   Rscript examples/bfi/make_reference.R
#
# Writes into examples/bfi:
#   items.csv          id, text, scale, keyed: the 25 items A1..O5, keyed "-" where psych's bfi.keys reverses the
#                      item ("-A1"). bfi.dictionary's Keying column is not used: it keys N1..N5 -1, the direction of
#                      emotional stability, while bfi.keys scores neuroticism with N1..N5 forward, as the scale's
#                      name says
#   bfi.csv            the raw answers, one row per respondent: A1..O5 (1..6, empty where bfi has NA), gender
#                      (bfi's code: 1 male, 2 female) and age_band, derived from age: 0-17, 18-29, 30-44, 45+
#                      (bfi's ages run from 3 to 86, median 26; a fifth of the sample is over 30 and under 45,
#                      the under-18s are kept apart rather than dropped, as bfi keeps them)
#   human_counts.csv   item_id, option_id, count, group: table() of every item per group — all, gender=1,
#                      gender=2, age_band=... — with zero counts kept; silico's own counts from bfi.csv must equal
#                      these exactly, and the file is itself a reference file of counts
#   human_scales.csv   scale, group, n_items_used, alpha, omega_total: psych's alpha()$total$raw_alpha and
#                      omega(x, nfactors = 1, fm = "pa")$omega.tot per scale and group on the keyed scores (7 - x
#                      for the items bfi.keys reverses), 17 significant digits
suppressPackageStartupMessages({
  library(psych)
  library(psychTools)
  library(GPArotation)
})
dir <- "examples/bfi"
fmt <- function(v) ifelse(is.na(v), "", sprintf("%.17g", v))
data(bfi, package = "psych")
data(bfi.dictionary, package = "psychTools")

items <- paste0(rep(c("A", "C", "E", "N", "O"), each = 5), 1:5)
dict <- bfi.dictionary[items, ]
keys <- unlist(psych::bfi.keys)
reversed <- setNames(items %in% sub("^-", "", keys[startsWith(keys, "-")]), items)
stopifnot(setequal(sub("^-", "", keys), items))
write.csv(data.frame(id = items, text = dict$Item, scale = substr(items, 1, 1),
                     keyed = ifelse(reversed, "-", "+")),
          file.path(dir, "items.csv"), row.names = FALSE)

bands <- c("0-17", "18-29", "30-44", "45+")
human <- bfi[, items]
human$gender <- bfi$gender
human$age_band <- as.character(cut(bfi$age, c(-Inf, 17, 29, 44, Inf), labels = bands))
write.csv(human, file.path(dir, "bfi.csv"), row.names = FALSE, na = "", quote = FALSE)

groups <- list(all = rep(TRUE, nrow(human)))
for (g in sort(unique(human$gender))) groups[[paste0("gender=", g)]] <- human$gender %in% g
for (b in bands) groups[[paste0("age_band=", b)]] <- human$age_band %in% b

counts <- list()
for (it in items) for (g in names(groups)) {
  tab <- table(factor(human[groups[[g]], it], levels = 1:6))
  counts[[length(counts) + 1]] <- data.frame(item_id = it, option_id = names(tab), count = as.integer(tab), group = g)
}
write.csv(do.call(rbind, counts), file.path(dir, "human_counts.csv"), row.names = FALSE, quote = FALSE)

scales <- list()
for (sc in c("A", "C", "E", "N", "O")) {
  cols <- items[substr(items, 1, 1) == sc]
  for (g in names(groups)) {
    x <- human[groups[[g]], cols]
    for (k in which(reversed[cols])) x[[k]] <- 7 - x[[k]]
    a <- suppressWarnings(suppressMessages(alpha(x, warnings = FALSE)))
    kept <- rownames(a$item.stats)
    om <- suppressWarnings(suppressMessages(omega(x[, kept], nfactors = 1, fm = "pa", plot = FALSE)))
    scales[[length(scales) + 1]] <- data.frame(scale = sc, group = g, n_items_used = length(kept),
                                               alpha = fmt(a$total$raw_alpha), omega_total = fmt(om$omega.tot))
  }
}
write.csv(do.call(rbind, scales), file.path(dir, "human_scales.csv"), row.names = FALSE, quote = FALSE)
cat(sprintf("psych %s: %d respondents, %d count rows, %d scale rows\n", packageVersion("psych"), nrow(human),
            length(counts), length(scales)))
