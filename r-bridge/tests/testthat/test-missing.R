test_that('missing = "error" names the first NA row, before any Python call', {
  err <- expect_error(bf_embed(c(a = "a cat", b = NA)), class = "bertfeat_error_missing_value")
  expect_identical(err$row, 2L)
})

test_that("missing-value errors read well", {
  expect_snapshot(error = TRUE, {
    bf_embed(c(a = "a cat", b = NA, c = NA))
    bf_embed(data.frame(title = c("a", "b"), body = c("x", NA)))
  })
})

test_that('missing = "zero": an NA row is all zeros, and the string "NA" is embedded as text', {
  m <- bf_embed(c("NA", NA, "a cat"), missing = "zero")
  expect_true(all(m[2, ] == 0))
  expect_gt(sum(abs(m[1, ])), 1)
  expect_identical(unname(m), python_reference(list("NA", NULL, "a cat"), missing = "zero"))
  expect_equal(unname(m[1, ]), unname(bf_embed("NA")[1, ]), tolerance = 1e-5)
  expect_false(isTRUE(all.equal(m[1, ], m[3, ])))
})

test_that('missing = "nan": an NA row is NaN, in each column of a data frame on its own', {
  m <- bf_embed(data.frame(a = c("a cat", NA), b = c(NA, "a dog")), missing = "nan", pooling = "mean")
  expect_true(all(is.nan(m[2, 1:384])))
  expect_true(all(is.nan(m[1, 385:768])))
  expect_false(anyNA(m[1, 1:384]))
  expect_false(anyNA(m[2, 385:768]))
  expect_equal(unname(m[2, 385:768]), unname(bf_embed("a dog", pooling = "mean")[1, ]), tolerance = 1e-5)
})

test_that("an all-NA logical column (as read.csv reads an empty column) holds missing texts", {
  m <- bf_embed(data.frame(a = c("a cat", "a dog"), b = NA), missing = "zero")
  expect_true(all(m[, 769:1536] == 0))
  expect_error(bf_embed(data.frame(a = "a cat", b = NA)), class = "bertfeat_error_missing_value")
})

test_that("blank texts are missing, the same rule as in Python and the command line", {
  blanks <- c("", " ", "\t\n", "\u200b", "\ufeff", "\u00a0\u2003")
  for (b in blanks) {
    err <- expect_error(bf_embed(c("a cat", b)), class = "bertfeat_error_missing_value")
    expect_identical(err$row, 2L)
  }
  m <- bf_embed(c("a cat", blanks, NA, "a dog"), missing = "zero")
  expect_true(all(m[2:8, ] == 0))
  expect_gt(sum(abs(m[1, ])), 1)
  expect_gt(sum(abs(m[9, ])), 1)
  expect_identical(unname(m), python_reference(list("a cat", "", " ", "\t\n", "\u200b", "\ufeff", "\u00a0\u2003", NULL,
                                                    "a dog"), missing = "zero"))
  expect_equal(unname(bf_embed("\u200bcat")[1, ]), unname(bf_embed("cat")[1, ]), tolerance = 1e-5)
})

test_that("R reads a text as blank exactly where Python does, character by character", {
  # what a tokenizer drops beside whitespace: U+FFFD (undecodable bytes), a lone accent, an emoji's variation
  # selector, private use; each is missing in R too
  for (b in c("\ufffd", "\u0301", "\ufe0f", "\ue000", " \ufffd\u0301\n")) {
    err <- expect_error(bf_embed(c("a cat", b)), class = "bertfeat_error_missing_value")
    expect_identical(err$row, 2L)
  }
  bertfeat:::python_module()
  points <- c(1:0xD7FF, 0xE000:0xFFFF, 0x10000:0x1FFFF, 0xE0000:0xE01EF, 0xF0000:0xF00FF)
  chars <- intToUtf8(points, multiple = TRUE)
  read <- reticulate::py_eval(paste(
    "lambda cs: [(__import__('unicodedata').category(c) != 'Cn', __import__('bertfeat.inputs').inputs.is_blank(c))",
    "for c in cs]"))
  both <- read(as.list(chars))
  # code points Python's Unicode leaves unassigned may be assigned in R's PCRE (a newer Unicode): left out
  assigned <- vapply(both, `[[`, logical(1), 1)
  python <- vapply(both, `[[`, logical(1), 2)[assigned]
  r <- bertfeat:::is_blank(chars[assigned])
  expect_gt(sum(python), 6000)
  expect_identical(sprintf("U+%04X", points[assigned][r != python]), character(0))
})

test_that("a blank text in an error shows its invisible characters, and only the head of a long one", {
  # encodeString() left them as they are (`blank (" ")` for a no-break space and a zero-width space) and printed a
  # blank text of a megabyte whole
  err <- expect_error(bf_embed(c("a cat", "\u00a0\u200b\t")), class = "bertfeat_error_missing_value")
  expect_match(conditionMessage(err), 'Row 2 of `x` is blank ("\\u00a0\\u200b\\t")', fixed = TRUE)
  err <- expect_error(bf_embed(c("a cat", strrep("\u3000", 1e6))), class = "bertfeat_error_missing_value")
  expect_match(conditionMessage(err), sprintf('is blank ("%s...", 1000000 characters)', strrep("\\u3000", 20)),
               fixed = TRUE)
  expect_lt(nchar(conditionMessage(err)), 1000)
})

test_that("a long run of whitespace before a word is read without a PCRE warning", {
  # `^[...]*$` backtracked over the run: past PCRE's match limit it warned "match limit exceeded"
  long <- strrep(" ", 1e7)
  expect_no_warning(blank <- bertfeat:::is_blank(c(paste0(long, "a"), long, paste0("a", long), NA)))
  expect_identical(blank, c(FALSE, TRUE, FALSE, FALSE))
})

test_that("blank-text errors read well", {
  expect_snapshot(error = TRUE, {
    bf_embed(c(a = "a cat", b = "  "))
  })
})
