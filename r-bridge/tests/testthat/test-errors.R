test_that("bad arguments are classed errors with messages that say what to pass", {
  expect_error(bf_embed("a", pooling = "avg"), class = "bertfeat_error_argument")
  expect_error(bf_embed("a", pooling = "mean+mean"), class = "bertfeat_error_argument")
  expect_error(bf_embed("a", missing = "drop"), class = "bertfeat_error_argument")
  expect_error(bf_embed("a", layers = 1.5), class = "bertfeat_error_argument")
  expect_error(bf_embed("a", max_length = "long"), class = "bertfeat_error_argument")
  expect_error(bf_embed("a", normalize = NA), class = "bertfeat_error_argument")
  expect_error(bf_embed("a", max_lenght = 10), class = "bertfeat_error_argument")
})

test_that("argument errors read well", {
  expect_snapshot(error = TRUE, {
    bf_embed("a", pooling = "avg")
    bf_embed("a", missing = "drop")
    bf_embed("a", layers = c(-1, 0.5))
    bf_embed("a", max_lenght = 10)
    bf_embed("a", 10)
  })
})

test_that("input that is not text is a classed error", {
  expect_error(bf_embed(1:3), class = "bertfeat_error_input")
  expect_error(bf_embed(list("a", "b")), class = "bertfeat_error_input")
  expect_error(bf_embed(matrix("a", 2, 2)), class = "bertfeat_error_input")
  expect_error(bf_embed(character()), class = "bertfeat_error_input")
  expect_error(bf_embed(data.frame(t = "a", n = 1)), class = "bertfeat_error_input")
  bad <- "caf\xe9"
  Encoding(bad) <- "latin1"
  expect_identical(dim(bf_embed(bad)), c(1L, 768L)) # marked latin1: converted, not an error
  Encoding(bad) <- "bytes"
  expect_error(bf_embed(bad), class = "bertfeat_error_input")
})

test_that("input errors read well", {
  expect_snapshot(error = TRUE, {
    bf_embed(c(1.5, 2))
    bf_embed(data.frame(text = "a", n_words = 3L))
    bf_embed(character())
  })
})

test_that("a missing column is a classed error naming it", {
  df <- data.frame(title = "a", body = "b")
  err <- expect_error(bf_embed(df, columns = c("title", "review")), class = "bertfeat_error_missing_column")
  expect_identical(err$columns, "review")
})

test_that("missing-column errors read well", {
  expect_snapshot(error = TRUE, bf_embed(data.frame(title = "a", body = "b"), columns = c("title", "review")))
})

test_that("an error raised in Python keeps its message and type", {
  err <- expect_error(bf_embed("a", max_length = 2), class = "bertfeat_error_python")
  expect_identical(err$python_type, "ValueError")
  expect_match(conditionMessage(err), "max_length=2 is not valid", fixed = TRUE)
  expect_error(bf_embed("a", model = "./no/such/model"), class = "bertfeat_error_python")
})
