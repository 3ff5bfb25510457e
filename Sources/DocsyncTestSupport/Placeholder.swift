enum _Placeholder_DocsyncTestSupport {}
