"""sitemapcrawl's Scrapy commands (``COMMANDS_MODULE``): ``sitemapreport``, ``sitemapstate``."""
