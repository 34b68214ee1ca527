"""Project choices only; every sitemapcrawl default is in ``sitemapcrawl.addon``."""

BOT_NAME = "sitemapcrawl"
SPIDER_MODULES = ["sitemapcrawl.spiders"]
NEWSPIDER_MODULE = "sitemapcrawl.spiders"
COMMANDS_MODULE = "sitemapcrawl.commands"

ADDONS = {"sitemapcrawl.addon.SitemapCrawlAddon": 0}

USER_AGENT = "sitemapcrawl/0.1 (+https://github.com/sitemapcrawl/sitemapcrawl)"
# Pages fetched by later stages obey robots.txt; sitemap and robots.txt requests opt out
# (a sitemap a site declares is meant to be read).
ROBOTSTXT_OBEY = True
CONCURRENT_REQUESTS_PER_DOMAIN = 8
AUTOTHROTTLE_ENABLED = True
AUTOTHROTTLE_START_DELAY = 0.5
AUTOTHROTTLE_TARGET_CONCURRENCY = 4.0
DOWNLOAD_TIMEOUT = 60
RETRY_TIMES = 2
FEED_EXPORT_ENCODING = "utf-8"
TELNETCONSOLE_ENABLED = False
