library(testthat)
library(bertfeat)

test_check("bertfeat")
