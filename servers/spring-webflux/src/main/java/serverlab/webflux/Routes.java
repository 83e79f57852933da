package serverlab.webflux;

import static org.springframework.web.reactive.function.server.RequestPredicates.GET;
import static org.springframework.web.reactive.function.server.RequestPredicates.HEAD;
import static org.springframework.web.reactive.function.server.RequestPredicates.all;
import static org.springframework.web.reactive.function.server.RequestPredicates.path;

import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.HttpHeaders;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Mono;
import serverlab.contract.Contract;
import serverlab.contract.HttpDate;
import serverlab.contract.Reply;

/**
 * The routes as functional endpoints. Handlers compute in memory and return at once: nothing blocks
 * the event loop.
 */
@Configuration(proxyBeanMethods = false)
class Routes {

  @Bean
  RouterFunction<ServerResponse> contractRoutes(Contract contract) {
    return RouterFunctions.route()
        .route(GET("/").or(HEAD("/")), request -> reply(contract.root(rawQuery(request))))
        .route(
            GET("/workday").or(HEAD("/workday")),
            request -> reply(contract.workday(rawQuery(request))))
        // Any other method on a known path; then every other path. Both answer in plain text
        // here rather than through Spring Boot's JSON error handling.
        .route(path("/").or(path("/workday")), request -> reply(Reply.METHOD_NOT_ALLOWED))
        .route(all(), request -> reply(Reply.NOT_FOUND))
        .build();
  }

  /** The query string as sent, still percent-encoded: the contract decodes it itself. */
  private static String rawQuery(ServerRequest request) {
    return request.uri().getRawQuery();
  }

  private static Mono<ServerResponse> reply(Reply reply) {
    ServerResponse.BodyBuilder response =
        ServerResponse.status(reply.status())
            // Set as a string: MediaType.toString() would drop the space after ';'.
            .header(HttpHeaders.CONTENT_TYPE, Reply.CONTENT_TYPE)
            // Reactor Netty sends no Date header; HttpDate formats it once per second.
            .header(HttpHeaders.DATE, HttpDate.now());
    if (reply.status() == 405) {
      response.header(HttpHeaders.ALLOW, Reply.ALLOW);
    }
    // A byte[] body is wrapped, not copied, and gets an exact Content-Length (also on HEAD).
    return response.bodyValue(reply.body());
  }
}
