enum _Placeholder_DocsyncAgent {}
