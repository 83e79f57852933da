package serverlab.mvc;

import jakarta.servlet.ServletException;
import java.io.IOException;
import org.apache.catalina.connector.Request;
import org.apache.catalina.connector.Response;
import org.apache.catalina.valves.ValveBase;
import org.springframework.boot.web.embedded.tomcat.TomcatServletWebServerFactory;
import org.springframework.boot.web.server.WebServerFactoryCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import serverlab.contract.Reply;

/** Tomcat settings that Spring Boot has no property for. */
@Configuration(proxyBeanMethods = false)
class TomcatConfiguration {

  @Bean
  WebServerFactoryCustomizer<TomcatServletWebServerFactory> contractTomcat() {
    return factory -> {
      factory.addContextValves(new ContentTypeValve());
      // Let TRACE reach the routes (with spring.mvc.dispatch-trace-request=true), which answer
      // 405 with the contract's Allow header. Tomcat's own refusal would list every servlet
      // method instead. Nothing here ever echoes a request.
      factory.addConnectorCustomizers(connector -> connector.setAllowTrace(true));
    };
  }

  /**
   * Sends {@code Content-Type: text/plain; charset=utf-8} spelled exactly as the contract does.
   *
   * <p>Tomcat parses any Content-Type set through the Servlet API and renders it as {@code
   * type;charset=X}, without the space. Every response of this server is plain UTF-8 text, so this
   * valve sets the header text verbatim before the request reaches Spring; Spring keeps a
   * Content-Type that is already set, and the routes set none. Tomcat's own error pages (for
   * requests it rejects before any servlet) still replace it with theirs.
   */
  static final class ContentTypeValve extends ValveBase {

    ContentTypeValve() {
      super(true); // supports async requests
    }

    @Override
    public void invoke(Request request, Response response) throws IOException, ServletException {
      response.getCoyoteResponse().setContentTypeNoCharset(Reply.CONTENT_TYPE);
      getNext().invoke(request, response);
    }
  }
}
