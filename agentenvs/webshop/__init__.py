"""WebShop: a web shop to buy the product an instruction describes (real Flask app, BM25 search,
the official score), offline on an embedded generated catalogue or on the official data.

Modules: :mod:`~agentenvs.webshop.env` (``WebShopEnv``, ``agentenvs/WebShop-v0``),
:mod:`~agentenvs.webshop.browser` (``WebShopBrowserEnv``, ``agentenvs/WebShopBrowser-v0``: the
same pages through Selenium and Chromium), :mod:`~agentenvs.webshop.app` and
:mod:`~agentenvs.webshop.serve` (the Flask shop; ``python -m agentenvs.webshop.serve``),
:mod:`~agentenvs.webshop.shop` (sessions), :mod:`~agentenvs.webshop.pages` (page contents and text
views), :mod:`~agentenvs.webshop.html` (HTML pages and their visible text),
:mod:`~agentenvs.webshop.catalog` and :mod:`~agentenvs.webshop.goals` (data and goals),
:mod:`~agentenvs.webshop.search` (BM25), :mod:`~agentenvs.webshop.score` (the purchase score),
:mod:`~agentenvs.webshop.prompts` (agent prompts) and :mod:`~agentenvs.webshop.generate` (rebuilds
the embedded catalogue, from the word lists of :mod:`~agentenvs.webshop.vocabulary`; its title,
quantity and price text in :mod:`~agentenvs.webshop.generate_words`).
Documentation: docs/webshop.md.
"""
