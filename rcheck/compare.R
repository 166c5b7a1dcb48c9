# What every R check run by package rcheck shares. A check script sources this file (from its own path, which
# Rscript gives as --file=), records each of its figures with put(case, list(figure = value, ...)), and ends
# with compare_figures(DIR).

figs <- list()
put <- function(case, named) {
  for (nm in names(named)) figs[[paste(case, nm, sep = "|")]] <<- as.numeric(named[[nm]])
}

# compare_figures compares figs, R's figures by "case|figure", with Go's in DIR/go.csv (case, figure, value; "NA" where Go has no number). Prints "every figure agrees (N
# figures)" and returns when every figure equals Go's to 1e-9 (relative above 1), both missing counting as equal,
# and neither side has a figure the other lacks; otherwise prints each difference and "K of N figures differ" and
# quits with status 1.
compare_figures <- function(dir) {
  go <- read.csv(file.path(dir, "go.csv"), colClasses = "character")
  gov <- setNames(suppressWarnings(as.numeric(go$value)), paste(go$case, go$figure, sep = "|"))
  bad <- character()
  for (k in setdiff(names(figs), names(gov))) bad <- c(bad, sprintf("%s: R has %.17g, Go has no figure", k, figs[[k]]))
  for (k in setdiff(names(gov), names(figs))) bad <- c(bad, sprintf("%s: Go has %.17g, R has no figure", k, gov[[k]]))
  for (k in intersect(names(figs), names(gov))) {
    r <- figs[[k]]; g <- gov[[k]]
    if (is.na(r) && is.na(g)) next
    if (is.na(r) != is.na(g) || abs(r - g) > 1e-9 * max(1, abs(r))) bad <- c(bad, sprintf("%s: Go %.17g, R %.17g", k, g, r))
  }
  if (length(bad) > 0) {
    cat(bad, sep = "\n")
    cat(sprintf("%d of %d figures differ\n", length(bad), length(figs)))
    quit(status = 1)
  }
  cat(sprintf("every figure agrees (%d figures)\n", length(figs)))
}
