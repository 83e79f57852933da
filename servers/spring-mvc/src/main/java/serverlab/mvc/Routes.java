package serverlab.mvc;

import static org.springframework.web.servlet.function.RequestPredicates.GET;
import static org.springframework.web.servlet.function.RequestPredicates.HEAD;
import static org.springframework.web.servlet.function.RequestPredicates.all;
import static org.springframework.web.servlet.function.RequestPredicates.path;

import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.HttpHeaders;
import org.springframework.web.servlet.function.RouterFunction;
import org.springframework.web.servlet.function.RouterFunctions;
import org.springframework.web.servlet.function.ServerRequest;
import org.springframework.web.servlet.function.ServerResponse;
import serverlab.contract.Contract;
import serverlab.contract.Reply;

/**
 * The routes as Spring MVC functional endpoints (the servlet counterpart of the WebFlux stack's
 * routes). Unlike annotated controllers they also claim OPTIONS, TRACE and unknown methods, so
 * every other method on a known path gets the contract's 405.
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
        // here rather than through Spring Boot's error page.
        .route(path("/").or(path("/workday")), request -> reply(Reply.METHOD_NOT_ALLOWED))
        .route(all(), request -> reply(Reply.NOT_FOUND))
        .build();
  }

  /** The query string as sent, still percent-encoded: the contract decodes it itself. */
  private static String rawQuery(ServerRequest request) {
    return request.servletRequest().getQueryString();
  }

  private static ServerResponse reply(Reply reply) {
    // No Content-Type here: TomcatConfiguration.ContentTypeValve has set it, spelled as the
    // contract wants, and Spring keeps a Content-Type that is already set.
    ServerResponse.BodyBuilder response = ServerResponse.status(reply.status());
    if (reply.status() == 405) {
      response.header(HttpHeaders.ALLOW, Reply.ALLOW);
    }
    // byte[] bodies go out with an exact Content-Length, never chunked; Tomcat adds Date.
    return response.body(reply.body());
  }
}
