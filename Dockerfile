# One image for the web server and the Celery workers, with every toolchain the evaluator
# runs (Python, C++, Java, JavaScript, Go, Rust) and both sandboxes (bubblewrap, gVisor's
# runsc). The same image runs as:
#   web:     uvicorn webapp.asgi:application ...                (the default command)
#   worker:  celery -A webapp worker -Q default,eval-python ...
#   release: python manage.py migrate && python manage.py import_dataset package:humaneval
#   beat:    celery -A webapp beat ...                          (exactly one)
# compose.yaml runs them all on one host. See docs/webapp.md for the environment variables
# and the privileges the sandboxes need.
FROM debian:bookworm-slim

ENV DEBIAN_FRONTEND=noninteractive \
    LANG=C.UTF-8 \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# gVisor's runsc comes from trixie, pinned to its 2024-07-29 build (the systrap platform),
# and nothing else does: trixie's other packages are pinned out (deploy/apt/).
COPY deploy/apt/trixie-runsc.sources /etc/apt/sources.list.d/
COPY deploy/apt/trixie-runsc.pref /etc/apt/preferences.d/

# Debian's python3 is 3.11 on bookworm: the app runs on it, and the sandboxed runner uses
# /usr/bin/python3 inside the sandbox, and preloads numpy there for the programs that import
# it. util-linux brings setpriv, which bubblewrap needs when the worker runs as root.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      ca-certificates util-linux procps \
      python3 python3-venv python3-dev python3-numpy \
      g++ mold libboost-dev libssl-dev \
      openjdk-17-jdk-headless libjavatuples-java \
      nodejs npm \
      golang-go golang-github-stretchr-testify-dev \
      rustc cargo rustfmt librust-rand-dev librust-regex-dev librust-md5-dev \
      bubblewrap python3-seccomp runsc \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app

# Dependencies first, so code changes do not reinstall them.
COPY requirements.txt ./
COPY requirements/ requirements/
RUN python3 -m venv /opt/venv \
 && /opt/venv/bin/pip install -r requirements/base.txt

COPY manage.py ./
COPY bin/ bin/
COPY evaluator/ evaluator/
# JavaScript's test harness needs its pinned npm packages (acorn, js-md5, lodash).
RUN npm ci --prefix evaluator/languages/runtime/js --no-audit --no-fund
COPY webapp/ webapp/
# The web pages' pinned npm packages (Plotly's partial bundle), before collectstatic.
RUN npm ci --prefix webapp/static_packages --no-audit --no-fund
COPY templates/ templates/
COPY static/ static/
COPY docs/ docs/

ENV PATH=/opt/venv/bin:$PATH \
    DJANGO_SETTINGS_MODULE=webapp.settings \
    WORKBENCH_VAR_DIR=/var/lib/workbench \
    EVALUATOR_CACHE_DIR=/var/cache/evaluator \
    DJANGO_STATIC_ROOT=/app/staticfiles

# Static files are collected into the image; WhiteNoise serves them from the web process.
# The key here only satisfies Django during the build; set DJANGO_SECRET_KEY when running.
RUN DJANGO_SECRET_KEY=collectstatic-only python manage.py collectstatic --no-input -v 0 \
 && mkdir -p /var/lib/workbench

EXPOSE 8000
CMD ["uvicorn", "webapp.asgi:application", "--host", "0.0.0.0", "--port", "8000", \
     "--lifespan", "off", "--proxy-headers", "--forwarded-allow-ips", "*"]
