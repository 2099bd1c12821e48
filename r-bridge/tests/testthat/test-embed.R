texts <- c(first = "The cat sat on the mat.", second = "Stocks fell sharply on Monday.", third = "The cat sat on the mat.")

test_that("bf_embed() equals the Python BertEmbedder on the same texts", {
  m <- bf_embed(texts)
  expect_true(is.matrix(m) && is.double(m))
  expect_identical(unname(m), python_reference(as.list(unname(texts))))
  expect_identical(colnames(m), c(sprintf("text_cls_%03d", 0:383), sprintf("text_mean_%03d", 0:383)))
  expect_identical(rownames(m), names(texts))
  expect_identical(m[1, ], m[3, ])
  expect_false(identical(m[1, ], m[2, ]))
})

test_that("pooling, layers and the other BertEmbedder parameters reach Python", {
  m <- bf_embed(unname(texts), pooling = "cls+mean", layers = c(-1, -2), layer_agg = "concat", max_length = 16,
                normalize = TRUE)
  ref <- python_reference(as.list(unname(texts)), pooling = "cls+mean", layers = list(-1L, -2L),
                          layer_agg = "concat", max_length = 16L, normalize = TRUE)
  expect_identical(unname(m), ref)
  expect_identical(dim(m), c(3L, 4L * 384L))
  expect_identical(colnames(m)[c(1, 385, 769, 1536)],
                   c("text_cls_l6_000", "text_cls_l5_000", "text_mean_l6_000", "text_mean_l5_383"))
  expect_null(rownames(m))
  expect_equal(sqrt(sum(m[2, 385:768]^2)), 1, tolerance = 1e-6) # normalize = TRUE: unit norm per block
  # a character vector of poolings is the same request as the "+"-joined string
  expect_identical(bf_embed(unname(texts), pooling = c("cls", "mean"), layers = c(-1, -2), layer_agg = "concat",
                            max_length = 16, normalize = TRUE), m)
})

test_that("a data frame embeds its columns side by side, named like Python", {
  df <- data.frame(title = c("Great", "Meh"), body = c("Loved it.", "Too long."), row.names = c("r1", "r2"))
  m <- bf_embed(df, pooling = "mean")
  expect_identical(colnames(m)[c(1, 384, 385, 768)],
                   c("title_mean_000", "title_mean_383", "body_mean_000", "body_mean_383"))
  expect_identical(rownames(m), c("r1", "r2"))
  # another request batches the texts differently, which moves float32 results in the last digits
  expect_equal(unname(m[, 385:768]), unname(bf_embed(df$body, pooling = "mean")), tolerance = 1e-5)
  expect_equal(bf_embed(df, columns = "body", pooling = "mean"), m[, 385:768], tolerance = 1e-5)
  # the same request (the same frame, so the same batches) is Python's result bit for bit
  expect_identical(unname(m), python_reference(df, pooling = "mean"))
  expect_equal(unname(m[, 1:384]), python_reference(as.list(df$title), pooling = "mean"), tolerance = 1e-5)
})

test_that("row names come from names(x) or non-default data frame row names only", {
  expect_null(rownames(bf_embed(data.frame(t = c("a cat", "a dog")))))
  expect_null(rownames(bf_embed(tibble::tibble(t = c("a cat", "a dog")))))
  df <- data.frame(t = c("a cat", "a dog", "a cow"))
  expect_identical(rownames(bf_embed(df[c(3, 1), , drop = FALSE])), c("3", "1"))
  expect_null(rownames(bf_embed(c("a cat", "a dog"))))
})

test_that("factors are text", {
  f <- factor(c("a dog", "a cat", "a dog"))
  expect_identical(bf_embed(f), bf_embed(as.character(f))) # the same request, so the same batches
  expect_identical(bf_embed(data.frame(t = f)), bf_embed(data.frame(t = as.character(f))))
})

test_that("bf_embed() sends the whole input in one Python call", {
  res <- bertfeat:::embed_request(c(texts, texts, "A new one."))
  # one encode() saw all 7 rows and embedded the 3 distinct texts once
  expect_identical(res$stats$rows, 7L)
  expect_identical(res$stats$unique, 3L)
  expect_identical(dim(res$matrix), c(7L, 768L))
})

test_that("Python warnings come back as classed R warnings", {
  long <- paste(rep("word", 100), collapse = " ")
  expect_warning(m <- bf_embed(c(long, "short"), max_length = 16), class = "bertfeat_warning_truncation")
  expect_identical(dim(m), c(2L, 768L))
})

test_that("a model's note comes back as an R warning of its own class, to muffle apart from the others", {
  # Python's note that a model defines prompts (or that its modules are not applied) is a ModelNoteWarning, to
  # filter by class; R gave it the plain class every bertfeat warning has, so muffling it muffled truncation too
  model <- link_default_model(withr::local_tempdir())
  unlink(file.path(model, "config_sentence_transformers.json"))
  writeLines('{"prompts": {"query": "query: "}, "default_prompt_name": null}',
             file.path(model, "config_sentence_transformers.json"))
  long <- paste(rep("word", 100), collapse = " ")
  seen <- list()
  m <- withCallingHandlers(bf_embed(c(long, "short"), model = model, max_length = 16), warning = function(w) {
    seen[[length(seen) + 1L]] <<- w
    invokeRestart("muffleWarning")
  })
  expect_identical(dim(m), c(2L, 768L))
  expect_identical(lapply(seen, function(w) setdiff(class(w), c("rlang_warning", "warning", "condition"))),
                   list(c("bertfeat_warning_model_note", "bertfeat_warning"),
                        c("bertfeat_warning_truncation", "bertfeat_warning")))
  expect_match(conditionMessage(seen[[1]]), "defines prompts that its authors put before texts", fixed = TRUE)
})

test_that("the byte payload keeps orientation, float32 values and NaN", {
  module <- bertfeat:::python_module()
  X <- reticulate::py_eval("[[1.5, -2.0, 3.0], [4.0, float('nan'), 0.25]]", convert = FALSE)
  payload <- module$matrix_payload(X)
  expect_type(payload[[1]], "raw")
  m <- bertfeat:::payload_matrix(payload[[1]], payload[[2]], payload[[3]])
  expect_identical(m, matrix(c(1.5, -2, 3, 4, NaN, 0.25), nrow = 2, byrow = TRUE))
  expect_error(bertfeat:::payload_matrix(as.raw(1:7), 1L, 2L), class = "bertfeat_error_python")
})

test_that("cache_all_layers = TRUE reaches Python: other poolings and layers come from the cache", {
  dir <- withr::local_tempdir()
  first <- bf_embed(unname(texts), pooling = "cls", layers = -1, cache_dir = dir, cache_all_layers = TRUE)
  # a different pooling and layers on the same texts: answered from the all-layers cache entries
  second <- bertfeat:::embed_request(unname(texts), pooling = "mean", layers = c(-2, -1), cache_dir = dir,
                                     cache_all_layers = TRUE)
  expect_identical(second$stats$cache_hits, 2L)
  expect_identical(second$stats$cache_misses, 0L)
  direct <- bf_embed(unname(texts), pooling = "mean", layers = c(-2, -1))
  expect_equal(unname(second$matrix), unname(direct), tolerance = 1e-5)
  expect_equal(unname(first), unname(bf_embed(unname(texts), pooling = "cls", layers = -1)), tolerance = 1e-5)
  expect_error(bf_embed("a", cache_all_layers = "yes"), class = "bertfeat_error")
})

test_that("a vector of poolings may hold \"+\"-joined ones, as the check and bf_embed_file() take it", {
  # R's check passed c("cls+mean", "max") and Python refused it ("unknown pooling ['cls+mean']")
  m <- bf_embed(unname(texts[1:2]), pooling = c("cls+mean", "max"))
  expect_identical(colnames(m)[c(1, 385, 769)], c("text_cls_000", "text_mean_000", "text_max_000"))
  expect_identical(m, bf_embed(unname(texts[1:2]), pooling = "cls+mean+max"))
})

test_that("bf_embed() leaves R's random numbers as it found them, so a future running it warns of none", {
  # (found by a parallel workers hunt, 2026-11-27) reticulate writes a .Random.seed on each call into Python: a
  # session without one got one, and future_lapply() over bf_embed() warned "UNRELIABLE VALUE: ... unexpectedly
  # generated random numbers" at each iteration, under multicore and multisession alike
  old <- if (exists(".Random.seed", envir = globalenv(), inherits = FALSE)) get(".Random.seed", envir = globalenv())
  withr::defer(if (is.null(old)) bertfeat:::drop_rng_seed() else assign(".Random.seed", old, envir = globalenv()))
  bertfeat:::drop_rng_seed()
  bf_embed(unname(texts[1:2]))
  expect_false(exists(".Random.seed", envir = globalenv(), inherits = FALSE))
  set.seed(7)
  seed <- .Random.seed
  bf_embed(unname(texts[1:2]))
  expect_identical(.Random.seed, seed)
  bertfeat:::drop_rng_seed()
  bf_embed(sample(unname(texts[1:2]))) # a seed the argument's own code made stays
  expect_true(exists(".Random.seed", envir = globalenv(), inherits = FALSE))
  skip_if_not_installed("future")
  bertfeat:::drop_rng_seed()
  oplan <- future::plan("sequential")
  withr::defer(future::plan(oplan))
  withr::local_options(future.rng.onMisuse = "error")
  m <- future::value(future::future(bf_embed(unname(texts[1:2]))))
  expect_identical(m, bf_embed(unname(texts[1:2])))
})
