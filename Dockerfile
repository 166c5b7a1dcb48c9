# The silico worker (and the model simulator) as a static binary in an empty image, run as a non-root user.
#
#   docker build -t silico/worker:dev .
#
# The Go version is the one go.mod names. The binaries are pure Go (the SQLite driver included), so CGO is off
# and nothing from the build image is needed at run time but the CA certificates (model endpoints, Temporal
# Cloud and PostgreSQL over TLS).
FROM golang:1.26.8 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ENV CGO_ENABLED=0
RUN go build -trimpath -ldflags="-s -w" -o /out/silico-worker ./cmd/worker \
 && go build -trimpath -ldflags="-s -w" -o /out/silico-simulator ./cmd/simulator
# The user the worker runs as, and the directories it writes (its default SQLite store and exports).
RUN mkdir -p /out/root/etc /out/root/home/silico/out /out/root/home/silico/.silico /out/root/tmp \
 && echo 'silico:x:10001:10001:silico:/home/silico:/sbin/nologin' > /out/root/etc/passwd \
 && echo 'silico:x:10001:' > /out/root/etc/group \
 && chown -R 10001:10001 /out/root/home/silico \
 && chmod 1777 /out/root/tmp

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/root/ /
COPY --from=build /out/silico-worker /out/silico-simulator /usr/local/bin/
USER 10001:10001
WORKDIR /home/silico
ENTRYPOINT ["/usr/local/bin/silico-worker"]
