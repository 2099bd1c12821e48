#' @keywords internal
"_PACKAGE"

#' @importFrom generics required_pkgs tidy
#' @importFrom recipes bake prep
#' @importFrom rlang %||%
NULL
