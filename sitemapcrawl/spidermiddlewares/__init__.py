"""Spider middlewares: lastmod recorded per segment, URL items handed on in batches."""
