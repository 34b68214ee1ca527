"""sitemapcrawl's Scrapy commands (``COMMANDS_MODULE``): ``scrapy sitemapreport``."""
