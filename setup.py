"""Packaging for scrapyd-deploy only: the package, its entry point, nothing else."""

from setuptools import find_packages, setup

setup(
    name="sitemapcrawl",
    version="0.1.0",
    packages=find_packages(include=["sitemapcrawl", "sitemapcrawl.*"]),
    entry_points={"scrapy": ["settings = sitemapcrawl.settings"]},
    python_requires=">=3.11",
)
