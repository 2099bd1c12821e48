suppressPackageStartupMessages(library(recipes))

train <- data.frame(
  review = c("Loved every minute.", "Dreadful and far too long.", "Fine, nothing special."),
  score = c(5, 1, 3),
  n = 1:3
)
test <- data.frame(review = c("Not bad at all.", "Loved every minute."), score = c(4, 5), n = 4:5)

test_that("prep() then bake() on new data gives bf_embed()'s features in place of the text", {
  rec <- recipe(score ~ review + n, data = train) |> step_bert_embed(review)
  prepped <- prep(rec)
  baked <- bake(prepped, new_data = test)
  features <- c(sprintf("review_cls_%03d", 0:383), sprintf("review_mean_%03d", 0:383))
  expect_identical(names(baked), c("n", "score", features))
  expect_equal(unname(as.matrix(baked[features])), unname(bf_embed(test$review)), tolerance = 1e-5)
  expect_true(all(vapply(baked[features], is.double, logical(1))))
  roles <- summary(prepped)
  expect_identical(sort(unique(roles$role[roles$variable %in% features])), "predictor")
  expect_false("review" %in% roles$variable)
  # the training data, baked at prep()
  expect_equal(unname(as.matrix(bake(prepped, new_data = NULL)[features])), unname(bf_embed(train$review)),
               tolerance = 1e-5)
  expect_identical(prepped$steps[[1]]$features, features)
})

test_that("several columns, options, layers and keep_original_cols reach the embedding", {
  two <- transform(train, title = c("Yes", "No", "Maybe"))
  rec <- recipe(score ~ review + title, data = two) |>
    step_bert_embed(review, title, pooling = "cls", layers = -2, options = list(max_length = 8),
                    keep_original_cols = TRUE) |>
    prep()
  baked <- bake(rec, new_data = two)
  expect_true(all(c("review", "title") %in% names(baked)))
  expected <- bf_embed(two[c("review", "title")], pooling = "cls", layers = -2, max_length = 8)
  expect_identical(unname(as.matrix(baked[colnames(expected)])), unname(expected)) # the same request
  expect_identical(colnames(expected)[385], "title_cls_000")
})

test_that("print() and tidy() describe the step before and after prep()", {
  rec <- recipe(score ~ review, data = train) |> step_bert_embed(review, pooling = "cls+mean", id = "bert")
  expect_output(print(rec), "BERT embeddings \\(default, cls\\+mean pooling\\) of:? review")
  untrained <- tidy(rec, number = 1)
  expect_identical(untrained$terms, "review")
  expect_identical(untrained$n_features, NA_integer_)
  expect_identical(untrained$id, "bert")
  expect_identical(untrained$layers, "default (the last 4, or all of a model with fewer)")
  prepped <- prep(rec)
  expect_output(print(prepped), "of:? review.*[Tt]rained")
  trained <- tidy(prepped, number = 1)
  expect_identical(trained[c("terms", "model", "pooling", "layers", "n_features")],
                   tibble::tibble(terms = "review", model = "default", pooling = "cls+mean", layers = "3,4,5,6",
                                  n_features = 768L))
  # the layers the model gives, once known: the default model has 6 layers, a negative one counts from the last
  last <- recipe(score ~ review, data = train) |> step_bert_embed(review, layers = c(-1, 2)) |> prep()
  expect_identical(tidy(last, number = 1)$layers, "2,6")
  concat <- recipe(score ~ review, data = train) |>
    step_bert_embed(review, layers = c(-1, 2), options = list(layer_agg = "concat")) |> prep()
  expect_identical(tidy(concat, number = 1)$layers, "6,2") # concatenated in the order given
  expect_identical(tidy(recipe(score ~ review, data = train) |> step_bert_embed(review, layers = -1),
                        number = 1)$layers, "-1")
  # a step prepped by an older bertfeat recorded no layers: its own argument is all that is known
  old <- prepped
  old$steps[[1]]$layers_used <- NULL
  expect_identical(tidy(old, number = 1)$layers, "default (the last 4, or all of a model with fewer)")
  expect_identical(required_pkgs(prepped$steps[[1]]), "bertfeat")
  expect_true("bertfeat" %in% required_pkgs(prepped))
})

test_that("bake() of zero rows gives the feature columns without running the model", {
  prepped <- recipe(score ~ review, data = train) |> step_bert_embed(review) |> prep()
  empty <- bake(prepped, new_data = test[0, ])
  expect_identical(nrow(empty), 0L)
  expect_identical(names(empty), names(bake(prepped, new_data = test)))
  expect_true(all(vapply(empty[-1], is.double, logical(1))))
})

test_that("step errors are classed: bad arguments, non-text columns, missing columns, changed model", {
  expect_error(recipe(score ~ review, data = train) |> step_bert_embed(review, pooling = "avg"),
               class = "bertfeat_error_argument")
  expect_error(recipe(score ~ review, data = train) |> step_bert_embed(review, options = list(max_lenght = 3)),
               class = "bertfeat_error_argument")
  expect_error(recipe(score ~ ., data = train) |> step_bert_embed(n) |> prep(), class = "bertfeat_error_input")
  prepped <- recipe(score ~ review, data = train) |> step_bert_embed(review) |> prep()
  step <- prepped$steps[[1]]
  expect_error(bake(step, new_data = tibble::tibble(text = "a")), class = "bertfeat_error_missing_column")
  expect_error(bake(step, new_data = tibble::tibble(review = "a", review_mean_000 = 1)),
               class = "bertfeat_error_argument")
  step$fingerprint <- "an older recipe"
  expect_error(bake(step, new_data = tibble::tibble(review = "a")), class = "bertfeat_error_model_changed")
})

test_that("step errors read well", {
  prepped <- recipe(score ~ review, data = train) |> step_bert_embed(review) |> prep()
  expect_snapshot(error = TRUE, {
    bake(prepped$steps[[1]], new_data = tibble::tibble(text = "a"))
    recipe(score ~ ., data = train) |> step_bert_embed(n) |> prep()
  })
})

test_that("the NA policy applies in bake()", {
  prepped <- recipe(score ~ review, data = train) |> step_bert_embed(review, missing = "zero") |> prep()
  baked <- bake(prepped, new_data = data.frame(review = c(NA, "NA"), score = 1:2))
  expect_true(all(unlist(baked[1, -1]) == 0))
  expect_gt(sum(abs(unlist(baked[2, -1]))), 1)
  strict <- recipe(score ~ review, data = train) |> step_bert_embed(review) |> prep()
  expect_error(bake(strict, new_data = data.frame(review = NA_character_, score = 1)),
               class = "bertfeat_error_missing_value")
})

test_that("the step passes cache_dir to Python, so bf_embed() then reads the step's cache", {
  cache <- tempfile("bertfeat-cache-")
  on.exit(unlink(cache, recursive = TRUE), add = TRUE)
  prepped <- recipe(score ~ review, data = train) |> step_bert_embed(review, cache_dir = cache) |> prep()
  res <- bertfeat:::embed_request(train$review, cache_dir = cache)
  expect_identical(res$stats$cache_hits, 3L)
  expect_identical(unname(res$matrix), unname(as.matrix(bake(prepped, new_data = NULL)[-1])))
})

test_that("an unknown name in `options` is refused with what the step takes, a step argument named as such", {
  # it said "`...` takes these BertEmbedder parameters: ...; and `columns` for a data frame": the step has no
  # `...` for them, refuses `columns` in `options`, and takes `missing` as its own argument
  err <- expect_error(recipe(score ~ review, data = train) |> step_bert_embed(review, options = list(missing = "zero")),
                      class = "bertfeat_error_argument")
  expect_match(conditionMessage(err), "Pass `missing` to step_bert_embed() itself, not in `options`", fixed = TRUE)
  expect_no_match(conditionMessage(err), "`...`", fixed = TRUE)
  err <- expect_error(recipe(score ~ review, data = train) |> step_bert_embed(review, options = list(max_lenght = 8)),
                      class = "bertfeat_error_argument")
  expect_match(conditionMessage(err), "`options` takes these BertEmbedder parameters: max_length,", fixed = TRUE)
  expect_no_match(conditionMessage(err), "columns", fixed = TRUE)
})

test_that("a Python warning while prep() reads the recipe comes back as an R warning", {
  # the default model with prompts in its sentence-transformers config: the note that it defines prompts is
  # given once per model and process, and prep() is where the step first reads the model; it was printed on
  # the process's stderr, and bake() then had none to give
  model <- link_default_model(withr::local_tempdir())
  unlink(file.path(model, "config_sentence_transformers.json"))
  writeLines('{"prompts": {"query": "query: "}, "default_prompt_name": null}',
             file.path(model, "config_sentence_transformers.json"))
  rec <- recipe(score ~ review, data = train) |> step_bert_embed(review, model = model, pooling = "mean")
  expect_warning(prepped <- prep(rec), "defines prompts", class = "bertfeat_warning")
  expect_identical(ncol(bake(prepped, new_data = test)), 1L + 384L)
})

test_that("bake()'s errors about the new data name it as such, not as `x`", {
  prepped <- recipe(score ~ review, data = train) |> step_bert_embed(review) |> prep()
  # read.csv() reads a column of numeric-looking texts as numbers; the error spoke of an `x` the user never passed
  err <- expect_error(bake(prepped, new_data = data.frame(review = c(12, 40), score = 1:2)),
                      class = "bertfeat_error_input")
  expect_match(conditionMessage(err), "Column `review` of the data given to bake() is a numeric vector, not text.",
               fixed = TRUE)
})

test_that("a step prepped on a GPU bakes on a CPU in the dtype prep() fixed", {
  # dtype = "auto" is bfloat16 on a GPU and float32 on a CPU: bake() asked for "auto" again, got another recipe on
  # the CPU and blamed the model files ("prep the recipe again"), which would have changed the features too
  bertfeat:::python_module()
  reticulate::py_run_string(paste( # "auto" chooses as on a GPU; the model itself still runs here, on the CPU
    "import bertfeat.devices as bf_devices", "bf_saved = bf_devices.resolve_dtype",
    "bf_devices.resolve_dtype = lambda dtype, device: 'bfloat16' if dtype == 'auto' else dtype", sep = "\n"))
  rec <- recipe(score ~ review, data = train) |> step_bert_embed(review, pooling = "mean")
  prepped <- tryCatch(suppressWarnings(prep(rec)), finally = reticulate::py_run_string(
    "bf_devices.resolve_dtype = bf_saved"))
  expect_identical(prepped$steps[[1]]$dtype_used, "bfloat16")
  baked <- suppressWarnings(bake(prepped, new_data = test)) # bfloat16 on this CPU may warn that it is slower
  expect_identical(unname(as.matrix(baked[-1])),
                   unname(suppressWarnings(bf_embed(test$review, pooling = "mean", dtype = "bfloat16"))))
  # prepped here: this machine's dtype, and a step prepped before dtype_used was recorded bakes as it always did
  here <- prep(rec)
  expect_identical(here$steps[[1]]$dtype_used, "float32")
  here$steps[[1]]$dtype_used <- NULL
  expect_identical(unname(as.matrix(bake(here, new_data = test)[-1])),
                   unname(bf_embed(test$review, pooling = "mean")))
})

test_that("a relative model path baked from another working directory says where it pointed at prep()", {
  # bake() in another directory (a saved workflow served elsewhere) sent "models/minilm" to the Hugging Face cache
  # and advised `huggingface-cli download models/minilm`
  home <- withr::local_tempdir()
  model <- link_default_model(file.path(home, "models", "minilm"))
  rec <- recipe(score ~ review, data = train) |> step_bert_embed(review, model = "models/minilm", pooling = "mean")
  prepped <- withr::with_dir(home, prep(rec))
  expect_identical(prepped$steps[[1]]$model_dir, normalizePath(model))
  elsewhere <- withr::local_tempdir()
  err <- withr::with_dir(elsewhere, expect_error(bake(prepped, new_data = test),
                                                 class = "bertfeat_error_model_changed"))
  expect_match(conditionMessage(err), sprintf(
    "model = \"models/minilm\" is a relative path, read from the working directory (%s), which holds no such directory.",
    normalizePath(elsewhere)), fixed = TRUE)
  expect_match(conditionMessage(err), sprintf("rec$steps[[1]]$model <- \"%s\"", normalizePath(model)), fixed = TRUE)
  prepped$steps[[1]]$model <- prepped$steps[[1]]$model_dir # as the message says: bake() checks the files
  expect_identical(withr::with_dir(elsewhere, ncol(bake(prepped, new_data = test))), 1L + 384L)
})

test_that("a prepped recipe read with readRDS() in a new R session bakes, prints and tidies without library(bertfeat)", {
  # a plumber API or Shiny app loads recipes and readRDS("rec.rds"): bake() said "no applicable method for 'bake'
  # applied to an object of class \"c('step_bert_embed', 'step')\"", print() dumped the step's fields and tidy()
  # said there was no tidy method, as bertfeat's methods were never registered in that session
  dir <- withr::local_tempdir()
  rds <- file.path(dir, "rec.rds")
  # written at R's top level, as a user writes it: the selectors' environment is the global one (written here, in a
  # test's environment, they would carry that environment, and the bertfeat namespace with it, into the file)
  top <- new.env(parent = globalenv())
  top$train <- train
  rec <- eval(quote(recipes::recipe(score ~ review, data = train) |>
                      bertfeat::step_bert_embed(review, pooling = "mean", id = "bert")), top)
  saveRDS(list(prepped = prep(rec, retain = TRUE), unprepped = rec), rds)
  out <- run_r(paste(
    "suppressPackageStartupMessages(library(recipes))",
    sprintf("saved <- readRDS(\"%s\")", rds),
    "cat('loaded:', isNamespaceLoaded('bertfeat'), 'python:', reticulate::py_available(), '\\n')",
    "p <- saved$prepped",
    "baked <- bake(p, new_data = data.frame(review = factor(c('Not bad at all.', 'Loved every minute.')), score = 4:5))",
    "cat('baked:', dim(baked), names(baked)[2], format(baked[[2]][1], digits = 6), '\\n')",
    "cat('juiced:', dim(bake(p, new_data = NULL)), '\\n')",
    "print(p)",
    "cat('tidy:', unlist(tidy(p, number = 1)[c('layers', 'n_features', 'id')]), '\\n')",
    "cat('prepped again:', ncol(bake(prep(saved$unprepped), new_data = NULL)), '\\n')",
    sep = "\n"
  ))
  expected <- bf_embed(c("Not bad at all.", "Loved every minute."), pooling = "mean")
  expect_true("loaded: TRUE python: FALSE " %in% out, info = paste(out, collapse = "\n")) # Python starts at bake()
  expect_true(sprintf("baked: 2 385 review_mean_000 %s ", format(expected[1, 1], digits = 6)) %in% out,
              info = paste(out, collapse = "\n"))
  expect_true("juiced: 3 385 " %in% out, info = paste(out, collapse = "\n"))
  expect_true(any(grepl("BERT embeddings (default, mean pooling) of", out, fixed = TRUE)),
              info = paste(out, collapse = "\n"))
  expect_false(any(grepl("$fingerprint", out, fixed = TRUE)))
  expect_true("tidy: 3,4,5,6 384 bert " %in% out, info = paste(out, collapse = "\n"))
  expect_true("prepped again: 385 " %in% out, info = paste(out, collapse = "\n"))
})

test_that("a prepped step whose cache_dir cannot be made on this machine says how to set the step's cache_dir", {
  # a recipe saved with saveRDS() keeps the cache path of the machine that prepped it: bake() elsewhere repeated
  # Python's advice for a pickled pipeline, "(est.set_params(`cache_dir`...), or <step>`__cache_dir`... for a
  # Pipeline)", none of which an R user can do
  rec <- recipe(score ~ review, data = train) |>
    step_bert_embed(review, pooling = "mean", cache_dir = withr::local_tempdir()) |>
    prep()
  blocker <- withr::local_tempfile()
  writeLines("a file, not a folder", blocker)
  elsewhere <- file.path(blocker, "cache") # as /home/alice/.cache/bertfeat is on a server with no /home/alice
  rec$steps[[1]]$cache_dir <- elsewhere
  err <- expect_error(bake(rec, new_data = test), class = "bertfeat_error_python")
  message <- conditionMessage(err)
  expect_match(message, sprintf("cache_dir = \"%s\"", elsewhere), fixed = TRUE)
  expect_match(message, "does not exist and cannot be created", fixed = TRUE)
  expect_no_match(message, "set_params|Pipeline|pickled|__cache_dir")
  expect_match(message, "This step was prepped with that `cache_dir`", fixed = TRUE)
  expect_match(message, "rec$steps[[1]]$cache_dir <- \"~/.cache/bertfeat\"", fixed = TRUE)
  # as the message says
  rec$steps[[1]]$cache_dir <- NULL
  expect_identical(ncol(bake(rec, new_data = test)), 1L + 384L)
  # bf_embed() has no pipeline either: the advice is to pass another cache_dir
  err <- expect_error(bf_embed("a text", cache_dir = elsewhere), class = "bertfeat_error_python")
  expect_no_match(conditionMessage(err), "set_params|Pipeline|pickled|__cache_dir|This step")
  expect_match(conditionMessage(err), "Pass a writable directory on this machine, or cache_dir = NULL",
               fixed = TRUE)
})

test_that("a prepped step whose model path is not on this machine says how to point the step at the model", {
  # an absolute path of the machine that prepped (/home/alice/models/minilm) got Python's "Pass a directory ...",
  # though a prepped step takes no argument: its model is set in the step, and bake() checks the files are the same
  home <- withr::local_tempdir()
  model <- link_default_model(file.path(home, "models", "minilm"))
  rec <- recipe(score ~ review, data = train) |> step_bert_embed(review, model = model, pooling = "mean") |> prep()
  moved <- file.path(home, "elsewhere")
  file.rename(file.path(home, "models"), moved)
  err <- expect_error(bake(rec, new_data = test), class = "bertfeat_error_python")
  expect_match(conditionMessage(err), sprintf("model = \"%s\" looks like a local path", model), fixed = TRUE)
  expect_match(conditionMessage(err), "This step was prepped with the model at that path", fixed = TRUE)
  expect_match(conditionMessage(err), "rec$steps[[1]]$model <- \"/srv/models/my-model\"", fixed = TRUE)
  rec$steps[[1]]$model <- file.path(moved, "minilm") # as the message says
  expect_identical(ncol(bake(rec, new_data = test)), 1L + 384L)
})

test_that("arguments changed with update() before prep() are checked as step_bert_embed() checks them", {
  # update() of an unprepped step sets its fields past step_bert_embed()'s checks: prep() then failed with "argument is
  # not interpretable as logical" (keep_original_cols = "yes"), or spoke of a `...` the step has not (options = "...")
  rec <- recipe(score ~ review, data = train) |> step_bert_embed(review, pooling = "mean")
  flag <- rec
  flag$steps[[1]] <- update(flag$steps[[1]], keep_original_cols = "yes")
  err <- expect_error(prep(flag), class = "bertfeat_error_argument")
  expect_match(conditionMessage(err), "`keep_original_cols` must be TRUE or FALSE, not \"yes\".", fixed = TRUE)
  unnamed <- rec
  unnamed$steps[[1]] <- update(unnamed$steps[[1]], options = "max_length = 8")
  err <- expect_error(prep(unnamed), class = "bertfeat_error_argument")
  expect_match(conditionMessage(err), "`options` must be a named list such as list(max_length = 256), not \"max_length = 8\".",
               fixed = TRUE)
  columns <- rec
  columns$steps[[1]] <- update(columns$steps[[1]], options = list(columns = "review"))
  err <- expect_error(prep(columns), class = "bertfeat_error_argument")
  expect_match(conditionMessage(err), "Select the columns with the step's selectors, not `options$columns`.",
               fixed = TRUE)
  # and what update() sets right is what prep() uses
  fine <- rec
  fine$steps[[1]] <- update(fine$steps[[1]], keep_original_cols = TRUE, pooling = "cls")
  expect_identical(names(bake(prep(fine), new_data = test))[1:3], c("review", "score", "review_cls_000"))
})

test_that("a prepped step asking for a GPU the baking machine has not says how to set the step's device", {
  # prepped on a GPU machine with options = list(device = "cuda"), saved, baked on a CPU server: Python's "pass
  # device='cpu' or 'auto'" (half of it in Python's syntax), though a prepped step takes no argument
  skip_if(reticulate::import("torch")$cuda$is_available(), "this machine has a CUDA GPU")
  rec <- recipe(score ~ review, data = train) |> step_bert_embed(review, pooling = "mean") |> prep()
  rec$steps[[1]]$options$device <- "cuda" # as prep() on the GPU machine kept it
  err <- expect_error(bake(rec, new_data = test), class = "bertfeat_error_python")
  expect_match(conditionMessage(err), "torch sees no CUDA GPU here; pass device = \"cpu\" or device = \"auto\".",
               fixed = TRUE)
  expect_match(conditionMessage(err), "rec$steps[[1]]$options$device <- \"auto\"", fixed = TRUE)
  rec$steps[[1]]$options$device <- "auto" # as the message says
  expect_identical(ncol(bake(rec, new_data = test)), 1L + 384L)
  # bf_embed() takes the argument itself
  err <- expect_error(bf_embed("a text", device = "cuda"), class = "bertfeat_error_python")
  expect_match(conditionMessage(err), "pass device = \"cpu\" or device = \"auto\".", fixed = TRUE)
  expect_no_match(conditionMessage(err), "rec\\$steps")
})

test_that("a missing text at bake() says how to set the prepped step's policy, not only to pass an argument", {
  # a served recipe meets its first NA: "Pass `missing = \"zero\"` ..." named an argument bake() does not take
  strict <- recipe(score ~ review, data = train) |> step_bert_embed(review, pooling = "mean") |> prep()
  err <- expect_error(bake(strict, new_data = data.frame(review = c("Fine.", NA), score = 1:2)),
                      class = "bertfeat_error_missing_value")
  expect_identical(err$row, 2L)
  expect_match(conditionMessage(err), "Row 2 of column `review` is missing (NA)", fixed = TRUE)
  expect_match(conditionMessage(err), "This step was prepped with `missing = \"error\"`", fixed = TRUE)
  expect_match(conditionMessage(err), "rec$steps[[1]]$missing <- \"zero\"", fixed = TRUE)
  strict$steps[[1]]$missing <- "zero" # as the message says: the other rows' features are the same
  baked <- bake(strict, new_data = data.frame(review = c("Fine.", NA), score = 1:2))
  expect_true(all(unlist(baked[2, -1]) == 0))
  expect_equal(unlist(baked[1, -1], use.names = FALSE), as.vector(bf_embed("Fine.", pooling = "mean")),
               tolerance = 1e-5)
})

test_that("bake() gives exactly the columns prep() recorded, or refuses saying what changed", {
  # bake() compared the fingerprint only: a recipe prepped by a bertfeat that named its features otherwise (`_l2`
  # before `_l02`) baked under new names, silently, and tidy() counted what prep() recorded; a pooling edited in the
  # prepped step was blamed on the model's files
  prepped <- recipe(score ~ review, data = train) |> step_bert_embed(review, pooling = "mean", layers = -1) |> prep()
  expect_identical(names(bake(prepped, new_data = test)), c("score", prepped$steps[[1]]$features))

  renamed <- prepped
  renamed$steps[[1]]$features <- sub("_mean_", "_avg_", renamed$steps[[1]]$features, fixed = TRUE)
  err <- expect_error(bake(renamed, new_data = test), class = "bertfeat_error_model_changed")
  expect_match(conditionMessage(err), paste("This step now makes 384 features where prep() recorded 384, named",
                                            "otherwise from `review_mean_000` (prep(): `review_avg_000`)."),
               fixed = TRUE)
  expect_match(conditionMessage(err), "The embeddings are the same, but this bertfeat names them otherwise", fixed = TRUE)
  expect_match(conditionMessage(err), "prep the recipe again", fixed = TRUE)

  fewer <- prepped
  fewer$steps[[1]]$features <- fewer$steps[[1]]$features[-384]
  err <- expect_error(bake(fewer, new_data = test), class = "bertfeat_error_model_changed")
  expect_match(conditionMessage(err), "This step now makes 384 features where prep() recorded 383", fixed = TRUE)

  edited <- prepped
  edited$steps[[1]]$pooling <- "cls+mean"
  err <- expect_error(bake(edited, new_data = test), class = "bertfeat_error_model_changed")
  expect_match(conditionMessage(err), "This step now makes 768 features where prep() recorded 384", fixed = TRUE)
  expect_match(conditionMessage(err), "`pooling`, `layers` or `options` changed in the prepped step", fixed = TRUE)
  expect_no_match(conditionMessage(err), "model files", fixed = TRUE)
  # zero rows need no model: the recorded columns, as ever
  expect_identical(names(bake(prepped, new_data = test[0, ])), c("score", prepped$steps[[1]]$features))
})
