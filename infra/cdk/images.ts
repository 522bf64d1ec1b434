import * as ecr from "aws-cdk-lib/aws-ecr";
import { DockerImageAsset, Platform } from "aws-cdk-lib/aws-ecr-assets";
import type { Construct } from "constructs";

/**
 * Where the two container images come from.
 * - `asset`: `cdk deploy` builds infra/Dockerfile.handlers and infra/Dockerfile.stream-host from the repository
 *   with the local Docker engine and pushes them to the CDK bootstrap repository.
 * - `ecr`: images already built and pushed (by CI) to two ECR repositories under one tag. Synthesizing needs no
 *   Docker at all, which is what the tests use.
 */
export type ImageSources =
  | { kind: "asset"; repoRoot: string; gitCommit?: string }
  | { kind: "ecr"; handlersRepository: string; streamHostRepository: string; tag: string };

/** One image as an ECR repository and a tag: what both Lambda (DockerImageCode.fromEcr) and ECS consume. */
export interface ImageRef {
  repository: ecr.IRepository;
  tag: string;
}

/** Files a Docker build of this repository never needs (mirrors infra/Dockerfile.*.dockerignore). */
export const DOCKER_CONTEXT_EXCLUDES = [".git", "node_modules", "dist", ".data", "cdk.out", "**/cdk.out", "coverage", "*.log"];

export function resolveImages(scope: Construct, sources: ImageSources): { handlers: ImageRef; streamHost: ImageRef } {
  if (sources.kind === "ecr") {
    return {
      handlers: {
        repository: ecr.Repository.fromRepositoryName(scope, "HandlersRepository", sources.handlersRepository),
        tag: sources.tag,
      },
      streamHost: {
        repository: ecr.Repository.fromRepositoryName(scope, "StreamHostRepository", sources.streamHostRepository),
        tag: sources.tag,
      },
    };
  }
  const asset = (id: string, file: string) =>
    new DockerImageAsset(scope, id, {
      directory: sources.repoRoot,
      file,
      exclude: DOCKER_CONTEXT_EXCLUDES,
      // Lambda and the Fargate task both run x86_64 (see handlers-function.ts and stream-host-service.ts).
      platform: Platform.LINUX_AMD64,
      buildArgs: sources.gitCommit ? { GIT_COMMIT: sources.gitCommit } : {},
    });
  const handlers = asset("HandlersImage", "infra/Dockerfile.handlers");
  const streamHost = asset("StreamHostImage", "infra/Dockerfile.stream-host");
  return {
    handlers: { repository: handlers.repository, tag: handlers.imageTag },
    streamHost: { repository: streamHost.repository, tag: streamHost.imageTag },
  };
}
