# Which Jane Austen novel is this paragraph from? Frozen MiniLM features from bertfeat + glmnet, in R.
#
# Embeds paragraphs of the six novels (data/austen.csv.gz, public domain, from Debian's r-cran-janeaustenr) with
# the bundled default model, fits a multinomial ridge regression with glmnet::cv.glmnet on three quarters of them
# and reports the accuracy on the held-out quarter. The R twin of examples/austen_logreg.py.
#
#   Rscript examples/austen_glmnet.R                  # 150 paragraphs per novel
#   Rscript examples/austen_glmnet.R --per-book 20    # a quick run
#   BERTFEAT_EXAMPLE_PER_BOOK=20 Rscript examples/austen_glmnet.R
#   Rscript examples/austen_glmnet.R --cache-dir ~/.cache/bertfeat
#
# Run it from anywhere; it finds data/ next to examples/. It needs the R package (see docs/r.md) and glmnet.

suppressPackageStartupMessages({
  library(bertfeat)
  library(glmnet)
})

option <- function(args, name, default) {
  at <- match(name, args)
  if (is.na(at)) default else args[at + 1L]
}

script_dir <- function() {
  file_arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
  if (length(file_arg)) dirname(normalizePath(sub("^--file=", "", file_arg[1]))) else "examples"
}

# Paragraphs of at least `min_words` words, `per_book` of each novel drawn reproducibly.
load_austen <- function(path, per_book, seed = 0L, min_words = 20L) {
  austen <- utils::read.csv(gzfile(path), stringsAsFactors = FALSE, encoding = "UTF-8")
  austen <- austen[austen$n_words >= min_words, ]
  set.seed(seed)
  picked <- unlist(lapply(split(seq_len(nrow(austen)), austen$book), function(rows) {
    rows[sample.int(length(rows), min(per_book, length(rows)))]
  }))
  austen[sort(picked), ]
}

main <- function(args = commandArgs(trailingOnly = TRUE)) {
  per_book <- as.integer(option(args, "--per-book", Sys.getenv("BERTFEAT_EXAMPLE_PER_BOOK", "150")))
  cache_dir <- option(args, "--cache-dir", NULL)
  data_file <- option(args, "--data", file.path(script_dir(), "..", "data", "austen.csv.gz"))
  if (is.na(per_book) || per_book < 16L) {
    # below that, some cross-validation fold would train on fewer than 8 paragraphs of a novel
    stop("--per-book must be a whole number of at least 16", call. = FALSE)
  }

  austen <- load_austen(data_file, per_book)
  started <- Sys.time()
  # long paragraphs are embedded in full: overlapping 512-token windows, averaged
  X <- bf_embed(stats::setNames(austen$text, austen$id), long_text = "chunk",
                cache_dir = cache_dir)
  seconds <- as.numeric(difftime(Sys.time(), started, units = "secs"))
  y <- factor(austen$book)

  # a stratified three-quarters / one-quarter split
  set.seed(1L)
  train <- unlist(lapply(split(seq_along(y), y), function(rows) rows[sample.int(length(rows), round(0.75 * length(rows)))]))
  test <- setdiff(seq_along(y), train)

  # folds stratified by novel, so every fold's fit sees every novel
  nfolds <- if (per_book >= 40L) 5L else 3L
  foldid <- integer(length(train))
  for (rows in split(seq_along(train), y[train])) foldid[rows] <- sample(rep_len(seq_len(nfolds), length(rows)))
  fit <- cv.glmnet(X[train, ], y[train], family = "multinomial", alpha = 0, type.measure = "class",
                   foldid = foldid)
  predicted <- predict(fit, X[test, ], s = "lambda.min", type = "class")[, 1]
  accuracy <- mean(predicted == as.character(y[test]))
  majority <- max(table(y[train])) / length(train)

  cat(sprintf("texts: %d paragraphs of %d novels; features: %d (%s ... %s)\n", nrow(X), nlevels(y), ncol(X),
              colnames(X)[1], colnames(X)[ncol(X)]))
  cat(sprintf("embedding: %.1f s\n", seconds))
  cat(sprintf("held-out accuracy: %.3f on %d paragraphs (majority class: %.3f)\n", accuracy, length(test), majority))
  invisible(accuracy)
}

if (sys.nframe() == 0L) {
  main()
}
