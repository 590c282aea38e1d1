# The occustream package, exactly as the tests install it (pip install of this
# pyproject.toml), plus the building models. Used by docker-compose.yml for the
# worker, simulator and dashboard services.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    OCCUSTREAM_BUILDINGS=/app/buildings

WORKDIR /app
COPY pyproject.toml README.md ./
COPY mechanisms ./mechanisms
COPY occupancy ./occupancy
COPY infra ./infra
COPY simulator ./simulator
COPY streams ./streams
COPY connectors ./connectors
COPY readmodel ./readmodel
COPY dashboards ./dashboards
COPY research ./research
COPY occustream ./occustream
COPY bench ./bench
COPY buildings ./buildings
RUN pip install . \
    && useradd --system --home-dir /app occustream \
    && occustream --help > /dev/null

USER occustream
CMD ["occustream", "--help"]
