words <- list(pos = c("lovely", "delightful", "wonderful", "charming"), neg = c("dull", "tedious", "awful", "boring"))
probe_texts <- function(n = 36) {
  set.seed(1)
  y <- rep(c("good", "bad"), length.out = n)
  texts <- vapply(y, function(label) {
    paste(paste(sample(words[[if (label == "good") "pos" else "neg"]], 3, replace = TRUE), collapse = " "),
          "the cat sat")
  }, character(1))
  list(texts = unname(texts), y = y)
}

test_that("bf_probe() returns the Python probe's table as a tibble, and settings for step_bert_embed()", {
  d <- probe_texts()
  png <- withr::local_tempfile(fileext = ".png")
  cache <- withr::local_tempdir()
  p <- bf_probe(d$texts, factor(d$y), cv = 3, unions = 1, plot = png, cache_dir = cache, max_length = 32,
                long_text = "chunk")
  expect_s3_class(p, "bertfeat_probe")
  expect_s3_class(p$table, "tbl_df")
  expect_identical(p$table$rank, seq_len(nrow(p$table)))
  expect_setequal(unique(p$table$kind), c("embedding", "union", "tfidf"))
  expect_identical(p$metric, "roc_auc")
  expect_true(file.exists(png) && identical(p$plot, png))

  # the same call in Python gives the same table
  # (lists, not numpy arrays: those do not cross reticulate 1.28 with numpy 2)
  py <- reticulate::import("bertfeat", convert = FALSE)
  ref <- py$probe(as.list(d$texts), as.list(d$y), cv = 3L, unions = 1L, cache_dir = cache, max_length = 32L,
                  long_text = "chunk")
  column <- function(name) unlist(reticulate::py_to_r(ref$table[[name]]$tolist()))
  expect_identical(p$table$candidate, column("candidate"))
  expect_equal(p$table$score, column("score"), tolerance = 1e-12)
  expect_equal(p$table$std_err, column("std_err"), tolerance = 1e-12)
  expect_identical(p$kind, reticulate::py_to_r(ref$recommended_kind))

  # the recommendation drops into step_bert_embed() and gives the features the probe scored (embeddings only
  # here, so that the recommendation is a BertEmbedder; the cache answers the embedding pass)
  p <- bf_probe(d$texts, d$y, cv = 3, unions = 0, baseline = FALSE, cache_dir = cache, max_length = 32,
                long_text = "chunk")
  expect_identical(p$kind, "embedding")
  expect_identical(p$recommended$options$long_text, "chunk")
  # print() showed `code`, Python's "from bertfeat import BertEmbedder ...", to R users: now the step's call, which
  # run on the text column gives the recommended features (checked below)
  shown <- capture.output(print(p))
  expect_false(any(grepl("BertEmbedder", shown, fixed = TRUE)))
  call_line <- grep("^step_bert_embed\\(<text column>, ", shown, value = TRUE)
  expect_length(call_line, 1L)
  train <- data.frame(review = d$texts, label = factor(d$y))
  rec <- do.call(step_bert_embed, c(list(recipes::recipe(label ~ review, data = train), quote(review)),
                                    p$recommended))
  baked <- recipes::bake(recipes::prep(rec), new_data = NULL)
  direct <- do.call(bf_embed, c(list(d$texts, model = p$recommended$model, pooling = p$recommended$pooling,
                                     layers = p$recommended$layers, cache_dir = cache), p$recommended$options))
  expect_equal(unname(as.matrix(baked[, -1])), unname(direct), tolerance = 1e-6)
  printed <- eval(parse(text = paste("recipes::recipe(label ~ review, data = train) |>",
                                     sub("<text column>", "review", call_line, fixed = TRUE))))
  expect_identical(recipes::bake(recipes::prep(printed), new_data = NULL), baked)
  # a union's and TF-IDF's TF-IDF is said in words, as R has no one step for it
  expect_match(bertfeat:::r_recommendation(list(kind = "union", recommended = list(pooling = "mean", layers = -1L))),
               '^step_bert_embed\\(<text column>, pooling = "mean", layers = -1\\)\nbeside a TF-IDF of the same text')
  expect_match(bertfeat:::r_recommendation(list(kind = "tfidf", recommended = NULL)), "^a TF-IDF of the text alone \\(word 1-2 grams")
})

test_that("bf_probe() reads whole numbers as its help says, a regression past 10 values, whether integer or double", {
  # R's help says numbers with more than 10 distinct values are a regression, but an integer vector (what read.csv()
  # gives for a column of whole numbers: prices, counts, 1-100 scores) crossed as Python ints, which Python's "auto"
  # reads as classes: a 12-class classification, silently
  d <- probe_texts(12)
  p <- bf_probe(d$texts, 1:12 * 10L, cv = 2, unions = 0, baseline = FALSE, max_length = 32)
  expect_identical(c(p$task, p$metric), c("regression", "r2"))
})

test_that("bf_probe()'s refusals show R's labels as R prints them", {
  # whole numbers crossed as doubles (so that integer and double read alike) and came back as Python floats, "class(es)
  # 2.0 (2)", a logical as the text "FALSE"
  texts <- paste("text number", 1:12)
  refusal <- function(y, ...) {
    conditionMessage(expect_error(bf_probe(texts, y, cv = 3, unions = 0, ...), class = "bertfeat_error_python"))
  }
  for (y in list(c(rep(1L, 10), 2L, 2L), c(rep(1, 10), 2, 2))) {
    expect_match(refusal(y), "^class\\(es\\) 2 \\(2\\) of the labels y have fewer members than the 3")
  }
  expect_match(refusal(c(rep(1, 10), 2, 2), task = "classification"), "^class\\(es\\) 2 \\(2\\) of")
  expect_match(refusal(c(rep(TRUE, 10), FALSE, FALSE)), "^class\\(es\\) FALSE \\(2\\) of")
  expect_match(refusal(factor(c(rep("a", 10), "b", "b"))), '^class\\(es\\) "b" \\(2\\) of')
  err <- expect_error(bf_probe(texts, rep(1:2, each = 6), cv = 2, unions = 0, groups = c(rep(1, 6), rep(2, 5), 3)),
                      class = "bertfeat_error_python")
  expect_match(conditionMessage(err), "^class\\(es\\) 1 \\(1\\) of the labels y have fewer groups")
  # texts given as numbers to a regression: named as R names their kind, not numpy's <U1
  err <- expect_error(bf_probe(texts, rep(c("a", "b"), 6), cv = 2, unions = 0, task = "regression"),
                      class = "bertfeat_error_python")
  expect_match(conditionMessage(err), 'needs numeric labels, and y holds strings such as "a"', fixed = TRUE)
})

test_that("bf_probe() checks its arguments", {
  expect_error(bf_probe(c("a", "b"), 1), class = "bertfeat_error_input")
  expect_error(bf_probe(c("a", "b"), c(1, NA)), class = "bertfeat_error_missing_value")
  # an infinite label was named by Python from 0: "row 1" for R's row 2
  err <- expect_error(bf_probe(c("a", "b", "c"), c(1, -Inf, Inf)), class = "bertfeat_error_input")
  expect_match(conditionMessage(err), "`y` has 2 infinite labels (the first in row 2: -Inf)", fixed = TRUE)
  expect_error(bf_probe(c("a", "b"), c(1, 2), colour = "red"), class = "bertfeat_error_argument")
})

test_that("a factor with NA as a level (addNA(), factor(exclude = NULL)) has missing labels and groups, not a class \"NA\"", {
  # is.na() of such a factor is FALSE, and as.character() gives NA, which reticulate hands Python as the text "NA":
  # the missing labels were a class of their own, and the missing groups one group, silently
  y <- addNA(factor(c("good", "bad", NA, "good", "bad", NA)))
  err <- expect_error(bf_probe(letters[1:6], y), class = "bertfeat_error_missing_value")
  expect_match(conditionMessage(err), "`y` has 2 missing labels (the first in row 3)", fixed = TRUE)
  g <- factor(c("u1", "u1", "u2", NA, "u3", "u3"), exclude = NULL)
  err <- expect_error(bf_probe(letters[1:6], rep(c("good", "bad"), 3), groups = g), class = "bertfeat_error_missing_value")
  expect_match(conditionMessage(err), "`groups` has 1 missing value(s) (the first in row 4)", fixed = TRUE)
})

test_that("prefix and prompt_name reach the Python BertEmbedder", {
  texts <- c("The cat sat on the mat.", "Stocks fell sharply.")
  m <- bf_embed(texts, prefix = "query: ")
  expect_identical(unname(m), python_reference(as.list(texts), prefix = "query: "))
  expect_false(isTRUE(all.equal(m, bf_embed(texts))))
  expect_error(bf_embed(texts, prefix = "a: ", prompt_name = "query"), class = "bertfeat_error_python")
})

test_that("bf_probe() takes one text column, and names a missing or blank text by its R row", {
  d <- probe_texts(12)
  err <- expect_error(bf_probe(data.frame(a = d$texts, b = rev(d$texts)), d$y, cv = 2, unions = 0),
                      class = "bertfeat_error_input")
  expect_match(conditionMessage(err), "one text column", fixed = TRUE)
  x <- d$texts
  x[3] <- NA
  err <- expect_error(bf_probe(x, d$y, cv = 2, unions = 0), class = "bertfeat_error_missing_value")
  expect_identical(err$row, 3L)
  expect_match(conditionMessage(err), "Row 3 of `x` is missing (NA)", fixed = TRUE)
  expect_false(grepl("nan", conditionMessage(err), fixed = TRUE)) # the probe takes "error" or "zero" only
  x[3] <- " "
  err <- expect_error(bf_probe(x, d$y, cv = 2, unions = 0), class = "bertfeat_error_missing_value")
  expect_identical(err$row, 3L)
})

test_that("the probe's Python warnings come back as classed R warnings", {
  # they were printed on the process's stderr ("sys:1: TruncationWarning: ..."), out of reach of
  # withCallingHandlers(), suppressWarnings() and knitr
  d <- probe_texts(24)
  long <- paste(d$texts, d$texts, d$texts, d$texts)
  expect_warning(p <- bf_probe(long, d$y, cv = 2, unions = 0, baseline = FALSE, max_length = 8),
                 "were truncated", class = "bertfeat_warning_truncation")
  expect_s3_class(p, "bertfeat_probe")
})

test_that("bf_probe() prints Python's lines under the table: chance, the candidates left out, the note of noise", {
  # R's print judged chance by its own bar (the best row one standard error above it), which on noise labels said
  # nothing most of the time, and knew nothing of the candidates left out (session 17)
  d <- probe_texts(24)
  noise <- rep(c("a", "b", "b", "a"), 6) # labels the texts' words do not follow
  p <- bf_probe(d$texts, noise, cv = 2, unions = 0)
  ref <- reticulate::import("bertfeat", convert = FALSE)$probe(as.list(d$texts), as.list(noise), cv = 2L, unions = 0L)
  lines <- unlist(reticulate::import("bertfeat.probe_chance")$chance_lines(ref))
  expect_identical(p$notes, lines)
  expect_identical(p$notes[1], paste("left out: cls, layer 0 (its features are the same for every text, so it scores",
                                     "chance whatever the labels)"))
  expect_identical(p$left_out[[1]]$candidate, "cls, layer 0")
  expect_false("cls, layer 0" %in% p$table$candidate)
  expect_identical(p$chance$beaten, reticulate::py_to_r(ref$chance)$beaten)
  expect_equal(p$chance$bar, reticulate::py_to_r(ref$chance)$bar)
  # the note, where the best row does not clear the bar, in Python's words
  expect_identical(length(lines), if (p$chance$beaten) 2L else 3L)
  if (!p$chance$beaten) expect_match(lines[3], "^note: no row beats chance clearly: the best, rank 1, scores ")
  printed <- capture.output(print(p))
  expect_identical(utils::tail(printed, length(lines)), lines)
})

test_that("bf_probe() keeps each of its groups in one fold, draws its folds from random_state and gives chance", {
  # no way to keep a group's texts (a customer's reviews) in one fold, and random_state only through `...` (session 11)
  d <- probe_texts(24)
  d$y[c(1, 4, 7, 10, 13)] <- d$y[c(4, 1, 10, 7, 16)] # a few labels swapped, so that scores differ with the folds
  groups <- rep(sprintf("c%02d", 1:8), each = 3)
  p <- bf_probe(d$texts, d$y, cv = 2, unions = 0, max_length = 32, groups = factor(groups), random_state = 3)
  py <- reticulate::import("bertfeat", convert = FALSE)
  column <- function(ref, name) unlist(reticulate::py_to_r(ref$table[[name]]$tolist()))
  ref <- py$probe(as.list(d$texts), as.list(d$y), cv = 2L, unions = 0L, max_length = 32L, groups = as.list(groups),
                  random_state = 3L)
  expect_identical(p$table$candidate, column(ref, "candidate"))
  expect_equal(p$table$score, column(ref, "score"), tolerance = 1e-12)
  expect_identical(reticulate::py_to_r(ref$folds)$n_groups, 8L)
  # what the folds kept together: Python's result and --json held it, R's result and print nothing of it (session 11
  # review), so groups joined by copies of a text went unseen: here the 8 customers are 6 units (copies across them)
  expect_identical(p$folds, list(n_splits = 2L, random_state = 3L, copies_kept_together = TRUE, n_groups = 8L,
                                 n_fold_groups = 6L))
  expect_identical(p$folds, reticulate::py_to_r(ref$folds))
  expect_output(print(p), paste("classification, 2-fold cross-validated roc_auc (seed 3; 8 groups, each in one fold,",
                                "joined into 6 by copies of a text); recommended"), fixed = TRUE)
  seed0 <- py$probe(as.list(d$texts), as.list(d$y), cv = 2L, unions = 0L, max_length = 32L, groups = as.list(groups))
  expect_false(isTRUE(all.equal(sort(p$table$score), sort(column(seed0, "score")))))
  err <- expect_error(bf_probe(d$texts, d$y, cv = 2, groups = rep("one", 24)), class = "bertfeat_error_python")
  expect_match(conditionMessage(err), "the texts hold 1 groups, fewer than the 2 cross-validation folds", fixed = TRUE)
  expect_equal(p$chance, reticulate::py_to_r(ref$chance))
  expect_identical(p$chance$score, 0.5)
  expect_output(print(p), "chance (every text scored alike): 0.5000 +/- 0.0000", fixed = TRUE)

  g <- groups
  g[5] <- NA
  err <- expect_error(bf_probe(d$texts, d$y, cv = 2, groups = g), class = "bertfeat_error_missing_value")
  expect_match(conditionMessage(err), "`groups` has 1 missing value(s) (the first in row 5)", fixed = TRUE)
  expect_error(bf_probe(d$texts, d$y, cv = 2, groups = groups[-1]), class = "bertfeat_error_input")
  expect_error(bf_probe(d$texts, d$y, cv = 2, random_state = 1.5), class = "bertfeat_error_argument")
  # a negative seed passed R's check and was refused by Python in its own words ("so that result.cv gives ...")
  err <- expect_error(bf_probe(d$texts, d$y, cv = 2, random_state = -1), class = "bertfeat_error_argument")
  expect_match(conditionMessage(err), "`random_state` must be a whole number >= 0 (the seed of the folds' shuffle), not -1.",
               fixed = TRUE)
})
