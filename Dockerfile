FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
ENV NODE_ENV=production PORT=4000 HOST=0.0.0.0
EXPOSE 4000
CMD ["node", "bin/governance.js", "serve"]
