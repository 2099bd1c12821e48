test_that("examples/austen_glmnet.R embeds, fits cv.glmnet and beats the majority class on a small subset", {
  skip_if_not_installed("glmnet")
  root <- repo_root()
  skip_if(is.null(root), "not run from a bertfeat checkout")
  script <- file.path(root, "examples", "austen_glmnet.R")
  rscript <- file.path(R.home("bin"), "Rscript")
  out <- suppressWarnings(system2(rscript, c(shQuote(script), "--per-book", "20"), stdout = TRUE, stderr = TRUE))
  status <- attr(out, "status")
  expect_true(is.null(status) || status == 0L, label = paste(out, collapse = "\n"))
  line <- grep("^held-out accuracy:", out, value = TRUE)
  expect_length(line, 1L)
  numbers <- as.numeric(regmatches(line, gregexpr("[0-9]+\\.[0-9]+", line))[[1]])
  accuracy <- numbers[1]
  majority <- numbers[2]
  expect_gt(accuracy, majority + 0.1)
  expect_true(any(grepl("^texts: 120 paragraphs of 6 novels; features: 768", out)))
  expect_false(any(grepl("dangerous ground", out, fixed = TRUE))) # enough paragraphs per class and fold
})
